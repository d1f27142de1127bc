import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { RedisClient } from '../infra/redis.js';
import { jobCatalog, retention, type JobData } from '../jobs/catalog.js';
import type { EndpointRow, WebhookStore } from '../storage/webhooks.js';
import { recordAttemptResult, sendAttempt } from './attempt.js';
import { WebhookFleetState } from './fleet-state.js';

/** At most this many direct attempts in flight in one process; the others go to the queue as delivery jobs. */
export const DIRECT_ATTEMPTS_PER_PROCESS = 64;

/** A delivery just inserted by a dispatch in this process, and what its first attempt sends. */
export type DirectDelivery = {
  id: string;
  type: string;
  endpoint: EndpointRow;
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
 * the configured delays. When the endpoint's places are taken, or this process has `DIRECT_ATTEMPTS_PER_PROCESS`
 * attempts in flight, the delivery gets its job at once, as before.
 *
 * Nothing rests on this process living: its delivery is inserted pending and due again when the attempt's time
 * is up (`attemptMs`), so should the process die mid-attempt the outbox sweep finds it overdue with no job and
 * queues one (at least once: the receiver may get it twice, with the same `webhook-id`). On shutdown, attempts
 * in flight are waited for (`drain`).
 */
export class DirectDeliveries {
  private readonly inFlight = new Set<Promise<void>>();
  private starting = 0;

  constructor(private readonly deps: DirectDeps) {}

  /** How long an attempt may take (the URL check and the send): its delivery is due again after it. */
  get attemptMs(): number {
    return this.deps.config.WEBHOOK_TIMEOUT_MS;
  }

  /** Starts the delivery's first attempt in the background: false (nothing started) when no place or no room. */
  async start(store: WebhookStore, queue: Queue, delivery: DirectDelivery): Promise<boolean> {
    const { config, redis } = this.deps;
    if (this.inFlight.size + this.starting >= DIRECT_ATTEMPTS_PER_PROCESS) return false;
    this.starting++;
    const fleet = new WebhookFleetState(redis, config.QUEUE_PREFIX);
    const endpointId = delivery.endpoint._id.toHexString();
    try {
      const placed = await fleet.takeSlot(
        endpointId,
        delivery.id,
        config.WEBHOOK_ENDPOINT_CONCURRENCY,
        config.WEBHOOK_TIMEOUT_MS * 2,
      );
      if (!placed) return false;
    } finally {
      this.starting--;
    }
    const attempt = this.attempt(store, fleet, queue, delivery, endpointId)
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

  private async attempt(
    store: WebhookStore,
    fleet: WebhookFleetState,
    queue: Queue,
    delivery: DirectDelivery,
    endpointId: string,
  ): Promise<void> {
    const deps = { ...this.deps, store, fleet };
    let result;
    try {
      result = await sendAttempt(deps, delivery.endpoint, delivery.event);
    } finally {
      await fleet.releaseSlot(endpointId, delivery.id).catch(() => undefined);
    }
    const recorded = await recordAttemptResult(
      deps,
      { _id: delivery.id, type: delivery.type },
      1,
      endpointId,
      result,
    );
    if (recorded.retryAt === undefined) return;
    const spec = jobCatalog['deliver-webhook'];
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
