import type { Job } from 'bullmq';
import type { JobData } from '../jobs/catalog.js';
import { sweepOutbox } from '../use-cases/webhooks/sweep.js';
import type { WorkerContext } from './context.js';

/** The outbox sweep's job, run by its job scheduler (`sweepOutbox`). */
export async function sweepOutboxJob(
  data: JobData<'sweep-outbox'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ queued: number; requeued: number }> {
  const { config, log, queue, clock } = ctx;
  return sweepOutbox({ config, store: ctx.storage.webhooks, log, queue, clock }, data.requestId);
}
