import { UnrecoverableError, type Job } from 'bullmq';
import type { JobData } from './catalog.js';
import type { WorkerContext } from './context.js';

export async function sendMigrationEmailJob(_data: JobData<'send-migration-email'>, _job: Job, _ctx: WorkerContext): Promise<unknown> {
  throw new UnrecoverableError('send-migration-email is not implemented yet');
}
