import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RedisClient } from '../infra/redis.js';
import { jobCatalog, retention, type JobData } from '../jobs/catalog.js';
import type { EndpointRow, WebhookStore } from '../storage/webhooks.js';
import { recordAttemptResult, sendAttempt } from './attempt.js';
import { WebhookFleetState } from './fleet-state.js';
import { endpointPlaces, PLACE_WAIT_MS } from './endpoint-places.js';

/** At most this many direct attempts in flight in one process; the others go to the queue as delivery jobs. */
export const DIRECT_ATTEMPTS_PER_PROCESS = 64;

/** A delivery just inserted by a dispatch in this process, and what its first attempt sends. */
export type DirectDelivery = {
  id: string;
  type: string;
  endpoint: EndpointRow;
  eventKey: string;
  event: { eventId: string; body: string };
  /** The delivery job's id, should a retry be needed (`deliveryJobId`). */
  jobId: string;
  requestId: string;
};

export type DirectDeps = {
  config: Config;
  log: Pick<Logger, 'info' | 'warn'>;
  redis: RedisClient;
  clock: () => Date;
};

/**
 * First attempts made by the process that recorded the event, without a delivery job: the dispatch inserts
 * the delivery, takes one of its endpoint's places and sends in the background (the caller, a creation or an
 * import request, does not wait on the customer's endpoint). A delivered attempt is recorded as the job would
 * record it; one not accepted is recorded as the job's first attempt and its retries are a delivery job, on
 * the configured delays. When no place of its endpoint comes within the wait a delivery job would make, or this
 * process has `DIRECT_ATTEMPTS_PER_PROCESS` attempts in flight, the delivery gets its job, as before.
 *
 * Nothing rests on this process living: its delivery is inserted pending and due again when the attempt's time
 * is up (`attemptMs`), so should the process die mid-attempt the outbox sweep finds it overdue with no job and
 * queues one (at least once: the receiver may get it twice, with the same `webhook-id`). On shutdown, attempts
 * in flight are waited for (`drain`).
 */
export class DirectDeliveries {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: DirectDeps) {}

  /** How long an attempt may take (the wait for a place, the URL check and the send): its delivery is due again after it. */
  get attemptMs(): number {
    return PLACE_WAIT_MS + this.deps.config.WEBHOOK_TIMEOUT_MS;
  }

  /**
   * Starts the delivery's first attempt in the background: false (nothing started) when this process has
   * `DIRECT_ATTEMPTS_PER_PROCESS` in flight. The attempt waits for one of its endpoint's places as a delivery
   * job does (in this process's line, within bounds: `EndpointPlaces`); when none comes, the delivery gets its
   * job then.
   */
  start(store: WebhookStore, queue: Queue, delivery: DirectDelivery): boolean {
    if (this.inFlight.size >= DIRECT_ATTEMPTS_PER_PROCESS) return false;
    const attempt = this.attempt(store, queue, delivery)
      .catch((err: Error) =>
        // Left pending: the outbox sweep gives it a job once it is overdue.
        this.deps.log.warn(
          { err: err.message, delivery: delivery.id },
          'direct webhook attempt not recorded',
        ),
      )
      .finally(() => this.inFlight.delete(attempt));
    this.inFlight.add(attempt);
    return true;
  }

  private async attempt(store: WebhookStore, queue: Queue, delivery: DirectDelivery): Promise<void> {
    const { config, redis } = this.deps;
    const fleet = new WebhookFleetState(redis, config.QUEUE_PREFIX);
    const deps = { ...this.deps, store, fleet };
    const endpointId = delivery.endpoint._id.toHexString();
    const spec = jobCatalog['deliver-webhook'];
    const places = endpointPlaces(fleet, redis, config);
    if (!(await places.take(endpointId, delivery.id))) {
      // No place came: the delivery's job, as a dispatch without a direct attempt queues it.
      const data: JobData<'deliver-webhook'> = {
        deliveryId: delivery.id,
        requestId: delivery.requestId,
        fresh: { endpointId, eventKey: delivery.eventKey, type: delivery.type },
      };
      await queue.add('deliver-webhook', data, { ...spec.options, ...retention, jobId: delivery.jobId });
      return;
    }
    let result;
    try {
      result = await sendAttempt(deps, delivery.endpoint, delivery.event);
    } finally {
      await places.release(endpointId, delivery.id).catch(() => undefined);
    }
    const recorded = await recordAttemptResult(
      deps,
      { _id: delivery.id, type: delivery.type },
      1,
      endpointId,
      result,
    );
    if (recorded.retryAt === undefined) return;
    const data: JobData<'deliver-webhook'> = { deliveryId: delivery.id, requestId: delivery.requestId };
    await queue.add('deliver-webhook', data, {
      ...spec.options,
      ...retention,
      jobId: delivery.jobId,
      delay: Math.max(0, recorded.retryAt - Date.now()),
    });
  }

  /** Waits for the attempts in flight (each bounded by `attemptMs`). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}

const attached = new WeakMap<object, DirectDeliveries>();

/** Gives the process's producer connection its direct deliveries (the API and the workers, at boot). */
export function attachDirectDeliveries(redis: RedisClient, deps: Omit<DirectDeps, 'redis'>) {
  const direct = new DirectDeliveries({ ...deps, redis });
  attached.set(redis, direct);
  return direct;
}

/** The direct deliveries of the process whose producer connection this is (none: every delivery is a job). */
export const directDeliveriesOf = (redis: RedisClient): DirectDeliveries | undefined => attached.get(redis);
