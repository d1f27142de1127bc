import type { Queue } from 'bullmq';
import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { RecordedEvent } from '../storage/process-events.js';
import { subscribedEndpoints, webhookStore, type EndpointRow } from '../storage/webhooks.js';
import { jobCatalog, jobId, retention } from '../jobs/catalog.js';

/**
 * Hands recorded events to the webhook queue at once (the fast path). Best effort: an event whose job could
 * not be queued (Redis down, a crash just after the write) is still `dispatched: false` in the outbox, and
 * the outbox sweep queues it later. The job id is the event's, so queueing twice runs it once.
 *
 * Most events never get here: one that no endpoint was subscribed to when it was recorded (most organisations
 * have none during a migration) is written already dispatched (see `ProcessEventLog`). With `models`, an event
 * written undispatched whose writer could not tell (the read failed) is checked here, by the same read of the
 * organisation's endpoints the dispatch job would make, and marked dispatched when nobody is subscribed,
 * instead of costing a job. Should the read or the mark fail, the event is queued as before.
 */
export async function relayEvents(
  queue: Queue,
  events: readonly (RecordedEvent | null | undefined)[],
  requestId: string,
  options: { models?: Models } = {},
): Promise<void> {
  let pending = events.filter((e): e is RecordedEvent => !!e && !e.dispatched);
  if (pending.length === 0) return;
  if (options.models) pending = await withoutUnsubscribed(options.models, pending);
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

/** Marks dispatched the events nobody is subscribed to; returns the others (and any it could not decide). */
async function withoutUnsubscribed(models: Models, events: RecordedEvent[]): Promise<RecordedEvent[]> {
  const store = webhookStore(models);
  const endpoints = new Map<string, Promise<EndpointRow[]>>();
  const endpointsOf = (org: Types.ObjectId) => {
    const key = String(org);
    let found = endpoints.get(key);
    if (!found) endpoints.set(key, (found = store.liveEndpoints(org)));
    return found;
  };
  const left = await Promise.all(
    events.map(async (event) => {
      // The writer found subscribers: queued without a second read.
      if (event.subscribed) return event;
      // Known only for an event this writer inserted (one found already there is queued as before).
      if (!event.organisationId || !event.occurredAt || !event.type) return event;
      try {
        const subscribed = subscribedEndpoints(await endpointsOf(event.organisationId), {
          type: event.type,
          occurredAt: event.occurredAt,
        });
        if (subscribed.length > 0) return event;
        await store.markDispatched(event._id);
        return null;
      } catch {
        return event;
      }
    }),
  );
  return left.filter((e): e is RecordedEvent => e !== null);
}
