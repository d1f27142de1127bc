import { UnrecoverableError, type Job } from 'bullmq';
import type { JobData } from './catalog.js';
import type { WorkerContext } from './context.js';

export async function verifyPaymentInstructionJob(_data: JobData<'verify-payment-instruction'>, _job: Job, _ctx: WorkerContext): Promise<unknown> {
  throw new UnrecoverableError('verify-payment-instruction is not implemented yet');
}
