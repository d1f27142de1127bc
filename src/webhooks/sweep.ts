import type { Job } from 'bullmq';
import { webhookStore } from '../storage/webhooks.js';
import { jobCatalog, jobId, retention, type JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';

/** An event this long after its write and still not dispatched is one the relay missed (the relay takes ms). */
const graceMs = (intervalMs: number) => Math.min(5_000, intervalMs);
const BATCH = 1_000;

/**
 * The outbox sweep, run every `OUTBOX_SWEEP_INTERVAL_MS` by a job scheduler: queues a dispatch for each event
 * the relay missed (a crash right after the write, Redis down at the time). The job id is new each round,
 * so an event whose earlier dispatch job failed for good is tried again; dispatching twice is harmless.
 */
export async function sweepOutboxJob(
  data: JobData<'sweep-outbox'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ queued: number }> {
  const now = ctx.clock();
  const missed = await webhookStore(ctx.db.models).undispatchedEvents(
    graceMs(ctx.config.OUTBOX_SWEEP_INTERVAL_MS),
    BATCH,
    now,
  );
  const spec = jobCatalog['dispatch-event'];
  await Promise.all(
    missed.map((event) =>
      ctx.queue(spec.queue).add(
        'dispatch-event',
        { eventKey: event._id, requestId: data.requestId },
        {
          ...spec.options,
          ...retention,
          jobId: jobId('dispatch', event.eventId, 'sweep', String(now.getTime())),
        },
      ),
    ),
  );
  if (missed.length > 0) ctx.log.info({ queued: missed.length }, 'outbox sweep queued missed events');
  return { queued: missed.length };
}
