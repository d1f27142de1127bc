import type { Queue } from 'bullmq';
import { deliveryJobOptions, type JobData } from '../../jobs/catalog.js';
import type { Config } from '../../config.js';
import type { EndpointRow } from '../../storage/webhooks/webhook-endpoints.js';
import type { DispatchedEvent } from '../../storage/webhooks/webhook-outbox.js';
import type { WebhookStore } from '../../storage/webhooks/webhook-store.js';
import { attemptOutcome, countOutcome, sendAttempt, type AttemptDeps, type AttemptState } from './attempt.js';
import type { WebhookFleetState } from './fleet-state.js';
import { PLACE_WAIT_MS, type EndpointPlaces } from './endpoint-places.js';

/** At most this many events' first attempts in flight in one process; the others are dispatched as before. */
export const DIRECT_EVENTS_PER_PROCESS = 64;

/**
 * How long an event's first attempts may take (the wait for a place, the URL check and the send): the outbox
 * sweep leaves an undispatched event alone this long past its grace, so it does not dispatch an event whose
 * attempts are still running.
 */
export const directAttemptMs = (config: Pick<Config, 'WEBHOOK_TIMEOUT_MS'>) =>
  PLACE_WAIT_MS + config.WEBHOOK_TIMEOUT_MS;

/** An event recorded in this process, its body and the endpoints it goes to (its writer's audience). */
export type DirectEvent = {
  event: DispatchedEvent;
  body: string;
  endpoints: readonly EndpointRow[];
  requestId: string;
};

/** What the attempts need: the process's fleet state and endpoint places (`WebhookProcess`). */
export type DirectDeps = AttemptDeps & { fleet: WebhookFleetState; places: EndpointPlaces };

/**
 * First attempts made by the process that recorded the event, before its deliveries are written: the relay
 * hands the event over and returns (the caller, a creation or an import request, does not wait on the
 * customer's endpoint); in the background each endpoint's attempt waits for one of its places as a delivery job
 * does (in this process's line: `EndpointPlaces`) and sends the body the writer wrote. Then its delivery is
 * inserted with what the attempt left (delivered; or pending, its retry a delivery job on the configured delays;
 * or, where no place came, pending with a job of its own, as a dispatch without direct attempts queues it), and
 * once every endpoint's is written the event is marked dispatched. A delivered event so costs one insert and
 * the delete of its outbox entry, not an insert and two updates.
 *
 * Nothing rests on this process living: until its deliveries are written the event stays undispatched in the
 * outbox, and the outbox sweep leaves it alone for the attempts' time (`directAttemptMs`) only; should the
 * process die mid-attempt, the sweep dispatches the event again (at least once: the receiver may get it twice,
 * with the same `webhook-id`). A dispatch that finds a delivery already written keeps that one. On shutdown,
 * the events in flight are waited for (`drain`). One per process (`WebhookProcess`): the bound is the process's.
 */
export class DirectDeliveries {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: DirectDeps) {}

  /** Starts the event's first attempts in the background: false (nothing started) when this process has `DIRECT_EVENTS_PER_PROCESS` in flight. */
  start(store: WebhookStore, queue: Queue, direct: DirectEvent): boolean {
    if (this.inFlight.size >= DIRECT_EVENTS_PER_PROCESS) return false;
    const dispatch = this.dispatch(store, queue, direct)
      .catch((err: Error) =>
        // Left undispatched: the outbox sweep dispatches it once the attempts' time is up.
        this.deps.log.warn(
          { err: err.message, event: direct.event.eventId },
          'webhook event not dispatched after its first attempts',
        ),
      )
      .finally(() => this.inFlight.delete(dispatch));
    this.inFlight.add(dispatch);
    return true;
  }

  private async dispatch(store: WebhookStore, queue: Queue, direct: DirectEvent): Promise<void> {
    // Each endpoint's delivery written as soon as its attempt is over (a slow endpoint's does not hold up
    // another's), then, once all are, the event marked (one not written: left to the sweep).
    const written = await Promise.allSettled(
      direct.endpoints.map(async (endpoint) =>
        this.write(store, queue, direct, endpoint, await this.firstAttempt(store, direct, endpoint)),
      ),
    );
    const failed = written.find((w) => w.status === 'rejected');
    if (failed) throw failed.reason;
    await store.outbox.markDispatched(direct.event._id);
  }

  /** Writes a delivery with what its first attempt left (none made: pending, with a job of its own). */
  private async write(
    store: WebhookStore,
    queue: Queue,
    { event, requestId }: DirectEvent,
    endpoint: EndpointRow,
    made: AttemptState | null,
  ): Promise<void> {
    const { fleet } = this.deps;
    const type = event.type!;
    const [delivery] = await store.deliveries.create(event, [endpoint], this.deps.clock(), [made]);
    // Written meanwhile by another dispatch of the event (the sweep's, had this attempt overrun its time):
    // that delivery has its own job.
    if (!delivery?.inserted) return;
    const options = deliveryJobOptions(delivery.id);
    if (!made || made.status === 'pending') await fleet.waiting(delivery.id, event.occurredAt);
    if (!made) {
      const data: JobData<'deliver-webhook'> = {
        deliveryId: delivery.id,
        requestId,
        fresh: { endpointId: delivery.endpointId, eventKey: event._id, type },
      };
      await queue.add('deliver-webhook', data, options);
      return;
    }
    await countOutcome(fleet, type, made, null);
    if (!made.nextAttemptAt) return;
    const data: JobData<'deliver-webhook'> = { deliveryId: delivery.id, requestId };
    await queue.add('deliver-webhook', data, {
      ...options,
      delay: Math.max(0, made.nextAttemptAt.getTime() - Date.now()),
    });
  }

  /** The first attempt to one endpoint, once one of its places is taken: null when none came (or it could not be made). */
  private async firstAttempt(
    store: WebhookStore,
    { event, body }: DirectEvent,
    endpoint: EndpointRow,
  ): Promise<AttemptState | null> {
    const { deps } = this;
    const { places } = deps;
    const endpointId = endpoint._id.toHexString();
    const id = store.deliveries.idOf(event.eventId, endpointId);
    // It holds no worker slot while it waits (this class bounds the events in flight): not counted in the
    // bound of deliveries waiting in the process.
    if (!(await places.take(endpointId, id, false))) return null;
    try {
      const result = await sendAttempt(deps, endpoint, { eventId: event.eventId, body });
      return attemptOutcome(deps, 1, endpointId, result);
    } catch (err) {
      deps.log.warn({ err: (err as Error).message, endpoint: endpointId }, 'direct webhook attempt failed');
      return null;
    } finally {
      await places.release(endpointId, id).catch(() => undefined); // silent-ok: the lease lapses on its own
    }
  }

  /** Waits for the events in flight (each bounded by `directAttemptMs` and its writes). */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}
