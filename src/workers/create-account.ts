import { UnrecoverableError, type Job } from 'bullmq';
import type { JobData } from './catalog.js';
import type { WorkerContext } from './context.js';

export async function createAccountJob(_data: JobData<'create-account'>, _job: Job, _ctx: WorkerContext): Promise<unknown> {
  throw new UnrecoverableError('create-account is not implemented yet');
}
