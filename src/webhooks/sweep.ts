import type { Job } from 'bullmq';
import { webhookStore } from '../storage/webhooks.js';
import {
  deliveryJobId,
  deliveryJobOptions,
  jobCatalog,
  jobId,
  retention,
  type JobData,
} from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { directAttemptMs } from './direct-deliveries.js';

/** A delivery this long past its due time and still pending with no job is one whose job was lost. */
const graceMs = (intervalMs: number) => Math.min(5_000, intervalMs);
const BATCH = 1_000;

/**
 * The outbox sweep, run every `OUTBOX_SWEEP_INTERVAL_MS` by a job scheduler: queues a dispatch for each event
 * the relay missed (a crash right after the write, Redis down at the time). The job id is new each round,
 * so an event whose earlier dispatch job failed for good is tried again; dispatching twice is harmless.
 * Then the deliveries: one still pending well after it was due whose job is gone from the queue (a Redis
 * Cluster failover loses what the old master had not replicated) gets its job again, under its own id.
 */
export async function sweepOutboxJob(
  data: JobData<'sweep-outbox'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ queued: number; requeued: number }> {
  const now = ctx.clock();
  const store = webhookStore(ctx.db.models);
  const grace = graceMs(ctx.config.OUTBOX_SWEEP_INTERVAL_MS);
  // Events and deliveries written by an earlier version get their entries (once per database).
  const indexed = await store.indexLegacy(now);
  if (indexed > 0)
    ctx.log.info({ indexed }, 'outbox sweep indexed events and deliveries written before the outbox entries');
  // An event still undispatched this long after its write is one the relay missed: the relay takes ms, but
  // its process's first attempts to the endpoints (`DirectDeliveries`) come before the event is marked.
  const missed = await store.undispatchedEvents(grace + directAttemptMs(ctx.config), BATCH, now);
  const spec = jobCatalog['dispatch-event'];
  await Promise.all(
    missed.map((event) =>
      ctx.queue(spec.queue).add(
        'dispatch-event',
        { eventKey: event._id, requestId: data.requestId },
        {
          ...spec.options,
          ...retention,
          jobId: jobId('dispatch', event._id, 'sweep', String(now.getTime())),
        },
      ),
    ),
  );
  if (missed.length > 0) ctx.log.info({ queued: missed.length }, 'outbox sweep queued missed events');

  const deliver = jobCatalog['deliver-webhook'];
  const queue = ctx.queue(deliver.queue);
  const overdue = await store.overdueDeliveries(grace, BATCH, now);
  const lost = (
    await Promise.all(
      overdue.map(async (delivery) => {
        const id = deliveryJobId(delivery._id, delivery.replays ?? 0);
        if ((await queue.getJobState(id)) !== 'unknown') return 0;
        await queue.add(
          'deliver-webhook',
          { deliveryId: delivery._id, requestId: data.requestId },
          deliveryJobOptions(delivery._id, delivery.replays ?? 0),
        );
        return 1;
      }),
    )
  ).reduce<number>((n, one) => n + one, 0);
  if (lost > 0) ctx.log.warn({ requeued: lost }, 'outbox sweep queued deliveries whose jobs were gone');
  return { queued: missed.length, requeued: lost };
}
