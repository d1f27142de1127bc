import { DelayedError, type Job } from 'bullmq';
import { stateOfRecord, webhookStore, type DeliveryState } from '../storage/webhooks.js';
import { deliveryJobId, type JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { endpointPlaces } from './endpoint-places.js';
import { WebhookFleetState } from './fleet-state.js';
import { attemptOutcome, countOutcome, sendAttempt, type AttemptState } from './attempt.js';

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
 *
 * Two runs at once (BullMQ runs a stalled job again while its first run may go on): each reads the delivery's
 * latest state, its endpoint and its event once it has its endpoint's place, right before the send, so neither
 * sends what is settled, replayed or to a removed endpoint as it was when the job began; and each outcome is
 * recorded as the step after the one read (`WebhookStore.recordStep`), which only one run can write: the other
 * run's outcome is dropped, never written over a newer state (a delivered delivery is never made pending
 * again). The run that lost goes on from the state the winner recorded.
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
  // Just inserted by its dispatch (step 0: pending, no attempt yet): its record is not read (its latest step is,
  // before the send).
  const delivery = data.fresh
    ? {
        _id: data.deliveryId,
        status: 'pending',
        attempts: 0,
        endpointId: data.fresh.endpointId,
        eventKey: data.fresh.eventKey,
        type: data.fresh.type,
        organisationId: null,
      }
    : await store.delivery(data.deliveryId);
  if (!delivery) return { status: 'missing' };
  const known = stateOfRecord(delivery);
  // The series (replay) this job is for; one whose id is not a delivery job's works on whichever is latest.
  const series = seriesOfJob(job.id, delivery._id);
  // Settled in this job's series or a later one (a record's copy is at times behind, never ahead).
  if (known.status !== 'pending' && known.series >= (series ?? known.series)) return { status: known.status };
  const endpointId = String(delivery.endpointId);
  const delay = async (until: number): Promise<never> => {
    await job.moveToDelayed(until, job.token);
    throw new DelayedError();
  };
  const places = endpointPlaces(fleet, ctx.redis, config);
  if (!(await places.take(endpointId, delivery._id)))
    return delay(Date.now() + ENDPOINT_BUSY_RETRY_MS + Math.floor(Math.random() * ENDPOINT_BUSY_RETRY_MS));

  let latest: DeliveryState;
  let next: AttemptState | null = null;
  let organisationId = delivery.organisationId;
  try {
    // Read now, not before the wait for a place: what another run or an operator changed meanwhile is seen.
    const [state, endpoint, event] = await Promise.all([
      store.latest(delivery._id, known),
      store.endpoint(endpointId),
      store.event(delivery.eventKey),
    ]);
    latest = state;
    organisationId ??= endpoint?.organisationId ?? event?.organisationId ?? null;
    if (latest.status === 'pending' && latest.series === (series ?? latest.series)) {
      if (!endpoint || endpoint.removedAt || !event?.body)
        // The endpoint was removed (or the event is gone): nothing will ever be sent.
        next = {
          status: 'failed',
          attempts: latest.attempts,
          lastHttpStatus: latest.lastHttpStatus,
          nextAttemptAt: null,
        };
      else {
        const result = await sendAttempt(attemptDeps, endpoint, { eventId: event.eventId, body: event.body });
        next = attemptOutcome(attemptDeps, latest.attempts + 1, endpointId, result);
      }
    }
  } finally {
    await places.release(endpointId, delivery._id).catch(() => undefined);
  }
  // Settled, or replayed since (the replay's own job delivers it): nothing for this run to do.
  if (!next) return { status: latest.status === 'pending' ? 'superseded' : latest.status };

  organisationId ??= (await store.delivery(delivery._id))?.organisationId ?? null;
  if (!organisationId) return { status: 'missing' };
  const { recorded, latest: standing } = await store.recordStep(
    { id: delivery._id, organisationId },
    latest,
    next,
  );
  // Counted by the run whose outcome stands.
  if (recorded)
    await countOutcome(fleet, delivery.type, next, next.status === 'pending' ? null : delivery._id);
  // Whichever run's outcome stands, the job goes on from it (this run's moves are refused if its job stalled).
  if (standing.status !== 'pending' || standing.series !== latest.series || !standing.nextAttemptAt)
    return { status: standing.status, attempts: standing.attempts };
  // From the first recorded attempt on, the delivery is what the job reads.
  if (data.fresh) await job.updateData({ deliveryId: data.deliveryId, requestId: data.requestId });
  return delay(standing.nextAttemptAt.getTime());
}

/** The series a delivery job is for, from its id (`deliveryJobId`); null for an id not made so. */
function seriesOfJob(jobId: string | undefined, delivery: string): number | null {
  const first = deliveryJobId(delivery);
  if (jobId === first) return 0;
  const replay = jobId?.startsWith(`${first}-`) ? Number(jobId.slice(jobId.lastIndexOf('-') + 1)) : NaN;
  return Number.isInteger(replay) && deliveryJobId(delivery, replay) === jobId ? replay : null;
}
