import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { EndpointRow } from '../../storage/webhooks/webhook-endpoints.js';
import type { WebhookFleetState } from './fleet-state.js';
import { openSecret } from './secret-box.js';
import { sendWebhook, type SendResult } from './sender.js';
import { checkWebhookUrl, UnsafeWebhookUrl, WebhookLookupTimeout } from './url-guard.js';

/**
 * One delivery attempt, as the delivery job and a direct delivery (`DirectDeliveries`) both make it: the send
 * (the URL guard, then the signed POST) and the record of its result. The endpoint's place is the caller's.
 */
export type AttemptDeps = {
  config: Config;
  log: Pick<Logger, 'info' | 'warn'>;
  clock: () => Date;
};

/** Sends the event to the endpoint once: the URL checked, then the signed POST, both within the delivery's time. */
export async function sendAttempt(
  deps: AttemptDeps,
  endpoint: Pick<EndpointRow, '_id' | 'url' | 'secret'>,
  event: { eventId: string; body: string },
): Promise<SendResult> {
  const { config } = deps;
  try {
    const started = Date.now();
    const target = await checkWebhookUrl(endpoint.url, config.WEBHOOK_ALLOW_PRIVATE, {
      lookupTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
    });
    return await sendWebhook(
      target,
      { id: event.eventId, body: event.body, secret: openSecret(endpoint.secret, config) },
      // The lookup and the send share the delivery's time.
      Math.max(100, config.WEBHOOK_TIMEOUT_MS - (Date.now() - started)),
      deps.clock(),
    );
  } catch (err) {
    // Retried like a send that timed out.
    if (err instanceof WebhookLookupTimeout)
      return { delivered: false, httpStatus: null, error: 'dns_timeout' };
    if (!(err instanceof UnsafeWebhookUrl)) throw err;
    deps.log.warn(
      { endpoint: endpoint._id.toHexString(), reason: err.message },
      'webhook endpoint refused by the URL guard',
    );
    return { delivered: false, httpStatus: null, error: 'unsafe_url' };
  }
}

/** What a delivery holds after its attempt number `attempts` (the step a job inserts, or the record a direct attempt inserts). */
export type AttemptState = {
  status: 'delivered' | 'failed' | 'pending';
  attempts: number;
  lastHttpStatus: number | null;
  nextAttemptAt: Date | null;
};

/**
 * The outcome of attempt number `attempts`: delivered, failed after its last attempt
 * (`WEBHOOK_RETRY_DELAYS_MS` used up), or pending until its next attempt (logged when not accepted).
 */
export function attemptOutcome(
  deps: Pick<AttemptDeps, 'config' | 'log'>,
  attempts: number,
  endpointId: string,
  result: SendResult,
  now: number = Date.now(),
): AttemptState {
  const state = { attempts, lastHttpStatus: result.httpStatus, nextAttemptAt: null };
  if (result.delivered) return { ...state, status: 'delivered' };
  deps.log.info(
    { endpoint: endpointId, http_status: result.httpStatus, error: result.error, attempts },
    'webhook delivery not accepted',
  );
  const wait = deps.config.WEBHOOK_RETRY_DELAYS_MS[attempts - 1];
  if (wait === undefined) return { ...state, status: 'failed' };
  return { ...state, status: 'pending', nextAttemptAt: new Date(now + wait) };
}

/** The fleet's counters for an outcome (`settled`: the delivery leaves the undelivered set). */
export async function countOutcome(
  fleet: WebhookFleetState,
  type: string,
  state: AttemptState,
  settled: string | null,
): Promise<void> {
  if (state.status === 'pending') await fleet.count(type, 'retried', null);
  else await fleet.count(type, state.status, settled);
}
