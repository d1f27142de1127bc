import type { Types } from 'mongoose';
import type { JobData } from '../../jobs/catalog.js';
import {
  stateOfRecord,
  type DeliveryState,
  type RecordedState,
} from '../../storage/webhooks/webhook-steps.js';
import type { WebhookStore } from '../../storage/webhooks/webhook-store.js';
import { attemptOutcome, countOutcome, sendAttempt, type AttemptDeps, type AttemptState } from './attempt.js';
import type { EndpointPlaces } from './endpoint-places.js';
import type { WebhookFleetState } from './fleet-state.js';

/** How long a delivery waits as a delayed job when its endpoint's places stayed taken (see `EndpointPlaces`). */
const ENDPOINT_BUSY_RETRY_MS = 200;

/** What a delivery needs: the webhook store, and the process's fleet state and endpoint places (`WebhookProcess`). */
export type DeliverDeps = AttemptDeps & {
  store: WebhookStore;
  fleet: WebhookFleetState;
  places: EndpointPlaces;
};

/**
 * One run of a delivery's job: the delivery, what its dispatch wrote of it when just inserted (`fresh`), and the
 * series (replay) the job is for (null: whichever is latest).
 */
export type DeliveryRun = Pick<JobData<'deliver-webhook'>, 'deliveryId' | 'fresh'> & {
  series: number | null;
};

/**
 * How the run ended (`status`), or when the delivery is to be run again (`waitUntil`: its endpoint's places
 * stayed taken, or its next attempt is due then). `fromRecord`: an attempt is recorded, so from then on the
 * delivery is read from its record (its job's `fresh` is dropped).
 */
export type DeliveryOutcome =
  { status: string; attempts?: number } | { waitUntil: number; fromRecord: boolean };

/** A delivery as its run reads it first (its record, or what its dispatch wrote of it). */
type Delivery = RecordedState & {
  _id: string;
  endpointId: Types.ObjectId | string;
  eventKey: string;
  type: string;
  organisationId: Types.ObjectId | null;
};

/**
 * Delivers one event to one endpoint. At least once: a worker killed after the receiver answered sends it
 * again, with the same `webhook-id`. Attempts and their schedule are the delivery's own (counted on the
 * delivery, waited out as a delayed job, `WEBHOOK_RETRY_DELAYS_MS`), so BullMQ's attempts are left for
 * real failures (the database unreachable). Per-endpoint isolation: at most `WEBHOOK_ENDPOINT_CONCURRENCY`
 * deliveries to one endpoint are in flight across the fleet; others wait a moment without holding a worker,
 * so a slow endpoint uses a few slots and every other endpoint keeps the rest (a delivery first waits for a
 * place a moment in its process, within bounds: `EndpointPlaces`).
 *
 * Two runs at once (BullMQ runs a stalled job again while its first run may go on): each reads the delivery's
 * latest state, its endpoint and its event once it has its endpoint's place, right before the send, so neither
 * sends what is settled, replayed or to a removed endpoint as it was when the job began; and each outcome is
 * recorded as the step after the one read (`WebhookDeliveries.recordStep`), which only one run can write: the
 * other run's outcome is dropped, never written over a newer state (a delivered delivery is never made pending
 * again). The run that lost goes on from the state the winner recorded.
 */
export async function deliverWebhook(deps: DeliverDeps, run: DeliveryRun): Promise<DeliveryOutcome> {
  // Just inserted by its dispatch (step 0: pending, no attempt yet): its record is not read (its latest step is,
  // before the send).
  const delivery: Delivery | null = run.fresh
    ? { _id: run.deliveryId, status: 'pending', attempts: 0, ...run.fresh, organisationId: null }
    : await deps.store.deliveries.find(run.deliveryId);
  if (!delivery) return { status: 'missing' };
  const known = stateOfRecord(delivery);
  // Settled in this job's series or a later one (a record's copy is at times behind, never ahead).
  if (known.status !== 'pending' && known.series >= (run.series ?? known.series))
    return { status: known.status };
  const endpointId = String(delivery.endpointId);
  if (!(await deps.places.take(endpointId, delivery._id)))
    return {
      waitUntil: Date.now() + ENDPOINT_BUSY_RETRY_MS + Math.floor(Math.random() * ENDPOINT_BUSY_RETRY_MS),
      fromRecord: false,
    };
  let attempt: Attempt;
  try {
    attempt = await attemptOnce(deps, delivery, known, run.series);
  } finally {
    await deps.places.release(endpointId, delivery._id).catch(() => undefined); // silent-ok: the lease lapses
  }
  // Settled, or replayed since (the replay's own job delivers it): nothing for this run to do.
  if (!attempt.next)
    return { status: attempt.latest.status === 'pending' ? 'superseded' : attempt.latest.status };
  return record(deps, delivery, attempt.latest, attempt.next, attempt.organisationId);
}

/** What an attempt read (the delivery's latest state) and left (none when the delivery was not for this run). */
type Attempt = { latest: DeliveryState; next: AttemptState | null; organisationId: Types.ObjectId | null };

/** The attempt made under the endpoint's place, from what is read now (what changed during the wait is seen). */
async function attemptOnce(
  deps: DeliverDeps,
  delivery: Delivery,
  known: DeliveryState,
  series: number | null,
): Promise<Attempt> {
  const endpointId = String(delivery.endpointId);
  const [latest, endpoint, event] = await Promise.all([
    deps.store.deliveries.latest(delivery._id, known),
    deps.store.endpoints.find(endpointId),
    deps.store.outbox.event(delivery.eventKey),
  ]);
  const organisationId = delivery.organisationId ?? endpoint?.organisationId ?? event?.organisationId ?? null;
  if (latest.status !== 'pending' || latest.series !== (series ?? latest.series))
    return { latest, next: null, organisationId };
  // The endpoint was removed (or the event is gone): nothing will ever be sent.
  if (!endpoint || endpoint.removedAt || !event?.body) {
    const { attempts, lastHttpStatus } = latest;
    return {
      latest,
      next: { status: 'failed', attempts, lastHttpStatus, nextAttemptAt: null },
      organisationId,
    };
  }
  const result = await sendAttempt(deps, endpoint, { eventId: event.eventId, body: event.body });
  return { latest, next: attemptOutcome(deps, latest.attempts + 1, endpointId, result), organisationId };
}

/** Records the attempt as the step after `latest`; the job goes on from whichever run's outcome stands. */
async function record(
  deps: DeliverDeps,
  delivery: Delivery,
  latest: DeliveryState,
  next: AttemptState,
  organisationId: Types.ObjectId | null,
): Promise<DeliveryOutcome> {
  organisationId ??= (await deps.store.deliveries.find(delivery._id))?.organisationId ?? null;
  if (!organisationId) return { status: 'missing' };
  const { recorded, latest: standing } = await deps.store.deliveries.recordStep(
    { id: delivery._id, organisationId },
    latest,
    next,
  );
  // Counted by the run whose outcome stands.
  if (recorded)
    await countOutcome(deps.fleet, delivery.type, next, next.status === 'pending' ? null : delivery._id);
  // Whichever run's outcome stands, the job goes on from it (this run's moves are refused if its job stalled).
  if (standing.status !== 'pending' || standing.series !== latest.series || !standing.nextAttemptAt)
    return { status: standing.status, attempts: standing.attempts };
  return { waitUntil: standing.nextAttemptAt.getTime(), fromRecord: true };
}
