import { DelayedError, type Job } from 'bullmq';
import { webhookStore } from '../storage/webhooks.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { endpointPlaces } from './endpoint-places.js';
import { WebhookFleetState } from './fleet-state.js';
import type { SendResult } from './sender.js';
import { recordAttemptResult, sendAttempt } from './attempt.js';

/** How long a delivery waits as a delayed job when its endpoint's places stayed taken (see `EndpointPlaces`). */
const ENDPOINT_BUSY_RETRY_MS = 200;

/**
 * Delivers one event to one endpoint. At least once: a worker killed after the receiver answered sends it
 * again, with the same `webhook-id`. Attempts and their schedule are the delivery's own (counted on the
 * delivery, waited out as a delayed job, `WEBHOOK_RETRY_DELAYS_MS`), so BullMQ's attempts are left for
 * real failures (the database unreachable). Per-endpoint isolation: at most `WEBHOOK_ENDPOINT_CONCURRENCY`
 * deliveries to one endpoint are in flight across the fleet; others wait a moment without holding a worker,
 * so a slow endpoint uses a few slots and every other endpoint keeps the rest (a delivery first waits for a
 * place a moment in its process, within bounds: `EndpointPlaces`).
 */
export async function deliverWebhookJob(
  data: JobData<'deliver-webhook'>,
  job: Job,
  ctx: WorkerContext,
): Promise<{ status: string; attempts?: number }> {
  const { config } = ctx;
  const store = webhookStore(ctx.db.models);
  const fleet = new WebhookFleetState(ctx.redis, config.QUEUE_PREFIX);
  const attemptDeps = { config, log: ctx.log, store, fleet, clock: ctx.clock };
  // Just inserted by its dispatch (pending, no attempt yet): not read again.
  const delivery = data.fresh
    ? {
        _id: data.deliveryId,
        status: 'pending',
        attempts: 0,
        endpointId: data.fresh.endpointId,
        eventKey: data.fresh.eventKey,
        type: data.fresh.type,
      }
    : await store.delivery(data.deliveryId);
  if (!delivery || delivery.status !== 'pending') return { status: delivery?.status ?? 'missing' };
  const [endpoint, event] = await Promise.all([
    store.endpoint(delivery.endpointId),
    store.event(delivery.eventKey),
  ]);
  if (!endpoint || endpoint.removedAt || !event?.body) {
    // The endpoint was removed (or the event is gone): nothing will ever be sent.
    await store.recordAttempt(delivery._id, { status: 'failed', nextAttemptAt: null });
    await fleet.count(delivery.type, 'failed', delivery._id);
    return { status: 'failed' };
  }
  const endpointId = endpoint._id.toHexString();
  const delay = async (until: number): Promise<never> => {
    await job.moveToDelayed(until, job.token);
    throw new DelayedError();
  };
  const places = endpointPlaces(fleet, ctx.redis, config);
  if (!(await places.take(endpointId, delivery._id)))
    return delay(Date.now() + ENDPOINT_BUSY_RETRY_MS + Math.floor(Math.random() * ENDPOINT_BUSY_RETRY_MS));

  let result: SendResult;
  try {
    result = await sendAttempt(attemptDeps, endpoint, { eventId: event.eventId, body: event.body });
  } finally {
    await places.release(endpointId, delivery._id).catch(() => undefined);
  }
  const recorded = await recordAttemptResult(
    attemptDeps,
    delivery,
    delivery.attempts + 1,
    endpointId,
    result,
  );
  if (recorded.retryAt === undefined) return { status: recorded.status, attempts: recorded.attempts };
  // From the first recorded attempt on, the delivery is what the job reads.
  if (data.fresh) await job.updateData({ deliveryId: data.deliveryId, requestId: data.requestId });
  return delay(recorded.retryAt);
}
