import type { Queue } from 'bullmq';
import type { Types } from 'mongoose';
import type { RedisClient } from '../infra/redis.js';
import type { Models } from '../models/index.js';
import type { RecordedEvent } from '../storage/process-events.js';
import {
  subscribedEndpoints,
  webhookStore,
  type DispatchedEvent,
  type EndpointRow,
} from '../storage/webhooks.js';
import { jobCatalog, jobId, retention } from '../jobs/catalog.js';
import { dispatchEvent } from './dispatch-event.js';
import { directDeliveriesOf } from './direct-deliveries.js';

/** What the relay needs to settle events itself instead of queueing a dispatch job for each. */
export type RelayOptions = {
  models?: Models;
  /** With it (and `models`), an event with subscribers is dispatched here, not by a job. */
  dispatch?: { redis: RedisClient; prefix: string; clock: () => Date };
};

/**
 * Hands recorded events on at once (the fast path). Best effort: an event the relay could not settle (Redis
 * down, a crash just after the write) is still `dispatched: false` in the outbox, and the outbox sweep queues
 * it later.
 *
 * Most events never get here: one that no endpoint was subscribed to when it was recorded (most organisations
 * have none during a migration) is written already dispatched (see `ProcessEventLog`). With `models`, the
 * others are settled here: one whose writer could not tell (the read failed) is checked by the same read of
 * the organisation's endpoints the dispatch job would make, and marked dispatched when nobody is subscribed;
 * one with subscribers is dispatched here with `dispatch` (its writer's endpoints, remembered by the webhook
 * store: no read, and no dispatch job; the first attempts made here where the process makes them,
 * `DirectDeliveries`). Whatever is left, or fails, is queued as a dispatch job, whose id is the event's, so
 * queueing twice runs it once.
 */
export async function relayEvents(
  queue: Queue,
  events: readonly (RecordedEvent | null | undefined)[],
  requestId: string,
  options: RelayOptions = {},
): Promise<void> {
  let pending = events.filter((e): e is RecordedEvent => !!e && !e.dispatched);
  if (pending.length === 0) return;
  if (options.models) {
    pending = await settleHere(options.models, queue, pending, requestId, options.dispatch);
    // Left to dispatch jobs: each gets an outbox entry of its own (which the job deletes), off its writer's page.
    const store = webhookStore(options.models);
    await Promise.all(
      pending.map((e) => (e.occurredAt ? store.handOver({ _id: e._id, occurredAt: e.occurredAt }) : null)),
    );
  }
  const spec = jobCatalog['dispatch-event'];
  await Promise.all(
    pending.map((event) =>
      queue
        .add(
          'dispatch-event',
          { eventKey: event._id, requestId },
          { ...spec.options, ...retention, jobId: jobId('dispatch', event.eventId) },
        )
        .catch(() => undefined),
    ),
  );
}

/** Settles the events it can (nobody subscribed: marked dispatched; subscribers: dispatched); returns the rest. */
async function settleHere(
  models: Models,
  queue: Queue,
  events: RecordedEvent[],
  requestId: string,
  dispatch: RelayOptions['dispatch'],
): Promise<RecordedEvent[]> {
  const store = webhookStore(models);
  const direct = dispatch ? directDeliveriesOf(dispatch.redis) : undefined;
  const live = new Map<string, Promise<EndpointRow[]>>();
  const liveOf = (org: Types.ObjectId) => {
    const key = String(org);
    let found = live.get(key);
    if (!found) live.set(key, (found = store.liveEndpoints(org)));
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
      // Its first attempts made here, where the process makes them.
      const sendsHere =
        direct && typeof event.body === 'string' ? { body: event.body, deliveries: direct } : undefined;
      try {
        // The writer's audience, as it remembered it (no read: an endpoint removed since it read is still in
        // it, for at most half the activation delay); read now when the writer could not tell.
        const endpoints = subscribedEndpoints(
          await (event.subscribed
            ? store.audienceAt(event.organisationId, event.occurredAt)
            : liveOf(event.organisationId)),
          recorded,
        );
        if (endpoints.length === 0) await store.markDispatched(event._id);
        else if (dispatch)
          await dispatchEvent({ store, queue, ...dispatch }, recorded, endpoints, requestId, sendsHere);
        else return event;
        return null;
      } catch {
        return event;
      }
    }),
  );
  return left.filter((e): e is RecordedEvent => e !== null);
}
