import { DelayedError, type Job } from 'bullmq';
import { webhookStore } from '../storage/webhooks.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { EndpointPlaces } from './endpoint-places.js';
import { WebhookFleetState } from './fleet-state.js';
import { sendWebhook, type SendResult } from './sender.js';
import { openSecret } from './secret-box.js';
import { checkWebhookUrl, UnsafeWebhookUrl, WebhookLookupTimeout } from './url-guard.js';

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
  const places = new EndpointPlaces(
    fleet,
    ctx.redis,
    config.WEBHOOK_ENDPOINT_CONCURRENCY,
    config.WEBHOOK_TIMEOUT_MS * 2,
    Math.floor(config.WORKER_CONCURRENCY / 4),
  );
  if (!(await places.take(endpointId, delivery._id)))
    return delay(Date.now() + ENDPOINT_BUSY_RETRY_MS + Math.floor(Math.random() * ENDPOINT_BUSY_RETRY_MS));

  let result: SendResult;
  try {
    const started = Date.now();
    const target = await checkWebhookUrl(endpoint.url, config.WEBHOOK_ALLOW_PRIVATE, {
      lookupTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
    });
    result = await sendWebhook(
      target,
      { id: event.eventId, body: event.body, secret: openSecret(endpoint.secret, config) },
      // The lookup and the send share the delivery's time.
      Math.max(100, config.WEBHOOK_TIMEOUT_MS - (Date.now() - started)),
      ctx.clock(),
    );
  } catch (err) {
    if (err instanceof WebhookLookupTimeout) {
      // Retried like a send that timed out; the endpoint's place is freed below all the same.
      result = { delivered: false, httpStatus: null, error: 'dns_timeout' };
    } else {
      if (!(err instanceof UnsafeWebhookUrl)) throw err;
      ctx.log.warn(
        { endpoint: endpointId, reason: err.message },
        'webhook endpoint refused by the URL guard',
      );
      result = { delivered: false, httpStatus: null, error: 'unsafe_url' };
    }
  } finally {
    await places.release(endpointId, delivery._id).catch(() => undefined);
  }

  const attempts = delivery.attempts + 1;
  // From the first recorded attempt on, the delivery is what the job reads.
  const recorded = async () => {
    if (data.fresh) await job.updateData({ deliveryId: data.deliveryId, requestId: data.requestId });
  };
  /** The delivery's last word: delivered, or failed after its last attempt. */
  const settle = async (status: 'delivered' | 'failed') => {
    await store.recordAttempt(delivery._id, {
      status,
      attempts,
      lastHttpStatus: result.httpStatus,
      nextAttemptAt: null,
    });
    await fleet.count(delivery.type, status, delivery._id);
    return { status, attempts };
  };
  if (result.delivered) return settle('delivered');
  const wait = config.WEBHOOK_RETRY_DELAYS_MS[attempts - 1];
  ctx.log.info(
    { endpoint: endpointId, http_status: result.httpStatus, error: result.error, attempts },
    'webhook delivery not accepted',
  );
  if (wait === undefined) return settle('failed');
  const next = Date.now() + wait;
  await store.recordAttempt(delivery._id, {
    status: 'pending',
    attempts,
    lastHttpStatus: result.httpStatus,
    nextAttemptAt: new Date(next),
  });
  await recorded();
  await fleet.count(delivery.type, 'retried', null);
  return delay(next);
}
