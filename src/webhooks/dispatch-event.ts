import { UnrecoverableError, type Job } from 'bullmq';
import type { JobData } from '../workers/catalog.js';
import type { WorkerContext } from '../workers/context.js';

/** Fans a recorded import event out to its organisation's webhook endpoints. */
export async function dispatchEventJob(
  _data: JobData<'dispatch-event'>,
  _job: Job,
  _ctx: WorkerContext,
): Promise<unknown> {
  throw new UnrecoverableError('webhook dispatch is being built');
}
