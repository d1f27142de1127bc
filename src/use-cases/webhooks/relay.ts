import type { Queue } from 'bullmq';
import type { Types } from 'mongoose';
import { jobCatalog, jobId, retention } from '../../jobs/catalog.js';
import type { RecordedEvent } from '../../storage/processes/process-event-records.js';
import { subscribedEndpoints, type EndpointRow } from '../../storage/webhooks/webhook-endpoints.js';
import type { DispatchedEvent } from '../../storage/webhooks/webhook-outbox.js';
import type { WebhookStore } from '../../storage/webhooks/webhook-store.js';
import { dispatchEvent } from './dispatch-event.js';
import type { WebhookProcess } from './webhook-process.js';

/** What the relay needs to settle events itself instead of queueing a dispatch job for each. */
export type RelayOptions = {
  store: WebhookStore;
  /** With it, an event with subscribers is dispatched here (its first attempts made by this process), not by a job. */
  dispatch?: WebhookProcess;
};

/**
 * Hands recorded events on at once (the fast path). Best effort: an event the relay could not settle (Redis
 * down, a crash just after the write) is still `dispatched: false` in the outbox, and the outbox sweep queues
 * it later.
 *
 * Most events never get here: one that no endpoint was subscribed to when it was recorded (most organisations
 * have none during a migration) is written already dispatched (see `ProcessEventLog`). The others are settled
 * here: one whose writer could not tell (the read failed) is checked by the same read of the organisation's
 * endpoints the dispatch job would make, and marked dispatched when nobody is subscribed; one with subscribers
 * is dispatched here with `dispatch` (its writer's endpoints, remembered by the webhook store's audience: no
 * read, and no dispatch job; the first attempts made here, `DirectDeliveries`). Whatever is left, or fails, is
 * queued as a dispatch job, whose id is the event's, so queueing twice runs it once.
 */
export async function relayEvents(
  queue: Queue,
  events: readonly (RecordedEvent | null | undefined)[],
  requestId: string,
  options: RelayOptions,
): Promise<void> {
  let pending = events.filter((e): e is RecordedEvent => !!e && !e.dispatched);
  if (pending.length === 0) return;
  const { store } = options;
  pending = await settleHere(options, queue, pending, requestId);
  // Left to dispatch jobs: each gets an outbox entry of its own (which the job deletes), off its writer's page.
  await Promise.all(
    pending.map((e) =>
      e.occurredAt ? store.outbox.handOver({ _id: e._id, occurredAt: e.occurredAt }) : null,
    ),
  );
  const spec = jobCatalog['dispatch-event'];
  await Promise.all(
    pending.map(async (event) => {
      try {
        await queue.add(
          'dispatch-event',
          { eventKey: event._id, requestId },
          { ...spec.options, ...retention, jobId: jobId('dispatch', event.eventId) },
        );
      } catch {
        // silent-ok: left undispatched in the outbox, which the sweep queues later.
      }
    }),
  );
}

/** Settles the events it can (nobody subscribed: marked dispatched; subscribers: dispatched); returns the rest. */
async function settleHere(
  { store, dispatch }: RelayOptions,
  queue: Queue,
  events: RecordedEvent[],
  requestId: string,
): Promise<RecordedEvent[]> {
  const live = new Map<string, Promise<EndpointRow[]>>();
  const liveOf = (org: Types.ObjectId) => {
    const key = String(org);
    let found = live.get(key);
    if (!found) live.set(key, (found = store.endpoints.live(org)));
    return found;
  };
  const left = await Promise.all(
    events.map(async (event) => {
      // Known only for an event this writer inserted (one found already there is queued as before).
      if (!event.organisationId || !event.occurredAt || !event.type) return event;
      const recorded: DispatchedEvent = {
        _id: event._id,
        eventId: event.eventId,
        type: event.type,
        organisationId: event.organisationId,
        occurredAt: event.occurredAt,
      };
      // The writer found subscribers: queued for the dispatch job unless it can be dispatched here.
      if (event.subscribed && !dispatch) return event;
      // Its first attempts made here.
      const sendsHere =
        dispatch && typeof event.body === 'string'
          ? { body: event.body, deliveries: dispatch.direct }
          : undefined;
      try {
        // The writer's audience, as it remembered it (no read: an endpoint removed since it read is still in
        // it, for at most half the activation delay); read now when the writer could not tell.
        const endpoints = subscribedEndpoints(
          await (event.subscribed
            ? store.audience.at(event.organisationId, event.occurredAt)
            : liveOf(event.organisationId)),
          recorded,
        );
        if (endpoints.length === 0) await store.outbox.markDispatched(event._id);
        else if (dispatch) {
          const deps = { store, fleet: dispatch.fleet, queue, clock: dispatch.clock };
          await dispatchEvent(deps, recorded, endpoints, requestId, sendsHere);
        } else return event;
        return null;
      } catch {
        // silent-ok: queued for its dispatch job, which tries again.
        return event;
      }
    }),
  );
  return left.filter((e): e is RecordedEvent => e !== null);
}
