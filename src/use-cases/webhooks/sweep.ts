import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import {
  deliveryJobId,
  deliveryJobOptions,
  jobCatalog,
  jobId,
  retention,
  type QueueName,
} from '../../jobs/catalog.js';
import type { WebhookStore } from '../../storage/webhooks/webhook-store.js';
import { directAttemptMs } from './direct-deliveries.js';

/** A delivery this long past its due time and still pending with no job is one whose job was lost. */
const graceMs = (intervalMs: number) => Math.min(5_000, intervalMs);
const BATCH = 1_000;

export type SweepDeps = {
  config: Pick<Config, 'OUTBOX_SWEEP_INTERVAL_MS' | 'WEBHOOK_TIMEOUT_MS'>;
  store: WebhookStore;
  log: Pick<Logger, 'info' | 'warn'>;
  /** The producer of each queue. */
  queue: (name: QueueName) => Queue;
  clock: () => Date;
};

/**
 * The outbox sweep, run every `OUTBOX_SWEEP_INTERVAL_MS` by a job scheduler: queues a dispatch for each event
 * the relay missed (a crash right after the write, Redis down at the time). The job id is new each round,
 * so an event whose earlier dispatch job failed for good is tried again; dispatching twice is harmless.
 * Then the deliveries: one still pending well after it was due whose job is gone from the queue (a Redis
 * Cluster failover loses what the old master had not replicated) gets its job again, under its own id.
 */
export async function sweepOutbox(
  deps: SweepDeps,
  requestId: string,
): Promise<{ queued: number; requeued: number }> {
  const now = deps.clock();
  const grace = graceMs(deps.config.OUTBOX_SWEEP_INTERVAL_MS);
  // Events and deliveries written by an earlier version get their entries (once per database).
  const indexed = await deps.store.outbox.indexLegacy(now);
  if (indexed > 0)
    deps.log.info(
      { indexed },
      'outbox sweep indexed events and deliveries written before the outbox entries',
    );
  const queued = await queueMissedEvents(deps, grace, now, requestId);
  if (queued > 0) deps.log.info({ queued }, 'outbox sweep queued missed events');
  const requeued = await requeueLostDeliveries(deps, grace, now, requestId);
  if (requeued > 0) deps.log.warn({ requeued }, 'outbox sweep queued deliveries whose jobs were gone');
  return { queued, requeued };
}

/**
 * A dispatch job for each event still undispatched well after its write: one the relay missed. The relay takes
 * ms, but its process's first attempts to the endpoints (`DirectDeliveries`) come before the event is marked.
 */
async function queueMissedEvents(deps: SweepDeps, grace: number, now: Date, requestId: string) {
  const missed = await deps.store.outbox.undispatchedEvents(grace + directAttemptMs(deps.config), BATCH, now);
  const spec = jobCatalog['dispatch-event'];
  await Promise.all(
    missed.map((event) =>
      deps.queue(spec.queue).add(
        'dispatch-event',
        { eventKey: event._id, requestId },
        {
          ...spec.options,
          ...retention,
          jobId: jobId('dispatch', event._id, 'sweep', String(now.getTime())),
        },
      ),
    ),
  );
  return missed.length;
}

/** Its job again for each delivery pending well after it was due whose job is gone from the queue. */
async function requeueLostDeliveries(deps: SweepDeps, grace: number, now: Date, requestId: string) {
  const queue = deps.queue(jobCatalog['deliver-webhook'].queue);
  const overdue = await deps.store.deliveries.overdue(grace, BATCH, now);
  const lost = await Promise.all(
    overdue.map(async (delivery) => {
      const id = deliveryJobId(delivery._id, delivery.replays ?? 0);
      if ((await queue.getJobState(id)) !== 'unknown') return 0;
      await queue.add(
        'deliver-webhook',
        { deliveryId: delivery._id, requestId },
        deliveryJobOptions(delivery._id, delivery.replays ?? 0),
      );
      return 1;
    }),
  );
  return lost.reduce<number>((n, one) => n + one, 0);
}
