import { UnrecoverableError, type Job } from 'bullmq';
import type { JobData } from './catalog.js';
import type { WorkerContext } from './context.js';

/** A v2 scheduled creation task. */
export async function runImportTaskJob(
  _data: JobData<'run-import-task'>,
  _job: Job,
  _ctx: WorkerContext,
): Promise<unknown> {
  throw new UnrecoverableError('scheduled tasks are being built');
}
