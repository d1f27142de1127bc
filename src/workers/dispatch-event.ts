import type { Job } from 'bullmq';
import { jobCatalog, type JobData } from '../jobs/catalog.js';
import { dispatchRecordedEvent } from '../use-cases/webhooks/dispatch-event.js';
import type { WorkerContext } from './context.js';

/** The dispatch job: fans the recorded event out to its endpoints, a delivery job each (`dispatchRecordedEvent`). */
export async function dispatchEventJob(
  data: JobData<'dispatch-event'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ deliveries: number }> {
  const deps = {
    store: ctx.storage.webhooks,
    fleet: ctx.webhooks.fleet,
    queue: ctx.queue(jobCatalog['deliver-webhook'].queue),
    clock: ctx.clock,
  };
  return { deliveries: await dispatchRecordedEvent(deps, data.eventKey, data.requestId) };
}
