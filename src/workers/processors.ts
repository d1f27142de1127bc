import type { Job } from 'bullmq';
import type { JobData, JobName } from '../jobs/catalog.js';
import type { WorkerContext } from './context.js';
import { createAccountJob, recordStalledCreation } from './create-account.js';
import { sendMigrationEmailJob } from './send-migration-email.js';
import { verifyPaymentInstructionJob } from './verify-payment-instruction.js';
import { runImportTaskJob } from './run-import-task.js';
import { dispatchEventJob } from './dispatch-event.js';
import { deliverWebhookJob } from './deliver-webhook.js';
import { sweepOutboxJob } from './sweep-outbox.js';

/** job name -> processor; the compiler checks every job in the catalogue has one. */
export const processors: {
  [N in JobName]: (data: JobData<N>, job: Job, ctx: WorkerContext) => Promise<unknown>;
} = {
  'create-account': createAccountJob,
  'run-import-task': runImportTaskJob,
  'dispatch-event': dispatchEventJob,
  'deliver-webhook': deliverWebhookJob,
  'sweep-outbox': sweepOutboxJob,
  'verify-payment-instruction': verifyPaymentInstructionJob,
  'send-migration-email': sendMigrationEmailJob,
};

/** job name -> what to record when BullMQ fails the job for stalling (its processor never got to say). */
export const onStalled: Partial<Record<JobName, (ctx: WorkerContext, job: Job) => Promise<void>>> = {
  'create-account': recordStalledCreation,
  'run-import-task': recordStalledCreation,
};
