import type { Queue } from 'bullmq';
import { deliveryJobOptions, type JobData } from '../../jobs/catalog.js';
import { subscribedEndpoints, type EndpointRow } from '../../storage/webhooks/webhook-endpoints.js';
import type { DispatchedEvent } from '../../storage/webhooks/webhook-outbox.js';
import type { WebhookStore } from '../../storage/webhooks/webhook-store.js';
import type { DirectDeliveries } from './direct-deliveries.js';
import type { WebhookFleetState } from './fleet-state.js';

/** What a dispatch needs: the webhook store, the process's fleet state and the queue of delivery jobs. */
export type DispatchDeps = {
  store: WebhookStore;
  fleet: WebhookFleetState;
  queue: Queue;
  clock: () => Date;
};

/** An event's body and the process's direct deliveries: first attempts are made here, without a job each. */
export type DirectDispatch = { body: string; deliveries: DirectDeliveries };

/**
 * Fans a recorded import event out to the endpoints it goes to: one delivery per endpoint (ids derived from
 * event and endpoint, so a second dispatch of the same event adds none), one delivery job each (ids derived
 * from the delivery, so none is queued twice), then the event is marked dispatched (its outbox entry
 * deleted). A crash anywhere is repaired by running it again, which the dispatch job's retries and the outbox
 * sweep do. A delivery inserted now tells its job what it holds, so the job's first run does not read it.
 * With `direct`, the event's first attempts are made in this process, in the background, before its
 * deliveries are written (`DirectDeliveries`), unless the process has too many in flight.
 */
export async function dispatchEvent(
  deps: DispatchDeps,
  event: DispatchedEvent,
  endpoints: readonly EndpointRow[],
  requestId: string,
  direct?: DirectDispatch,
): Promise<number> {
  if (direct?.deliveries.start(deps.store, deps.queue, { event, body: direct.body, endpoints, requestId }))
    return endpoints.length;
  const { store, fleet } = deps;
  const deliveries = await store.deliveries.create(event, endpoints, deps.clock());
  await Promise.all(
    deliveries.map(async (delivery) => {
      // One written before (a dispatch again) was counted by its writer, and may be settled since.
      if (delivery.inserted) await fleet.waiting(delivery.id, event.occurredAt);
      const data: JobData<'deliver-webhook'> = { deliveryId: delivery.id, requestId };
      if (delivery.inserted)
        data.fresh = { endpointId: delivery.endpointId, eventKey: event._id, type: event.type! };
      await deps.queue.add('deliver-webhook', data, deliveryJobOptions(delivery.id));
    }),
  );
  await store.outbox.markDispatched(event._id);
  return deliveries.length;
}

/** An outbox entry whose event is still missing this long after it was written belongs to no event. */
const UNWRITTEN_AFTER_MS = 60 * 60_000;

/**
 * The dispatch job's work: an event the relay could not dispatch itself (its writer did not know who is
 * subscribed, or the relay failed) or that the outbox sweep found undispatched, read by its key. It goes to the
 * endpoints subscribed when it was recorded: whether an endpoint added since gets it must not depend on how soon
 * it is dispatched. Returns how many deliveries it has.
 */
export async function dispatchRecordedEvent(
  deps: DispatchDeps,
  eventKey: string,
  requestId: string,
): Promise<number> {
  const { store } = deps;
  const event = await store.outbox.event(eventKey);
  // An entry with no event: its writer failed or died in between. Forgotten once the insert cannot be on its
  // way any more.
  if (!event) {
    await store.outbox.forgetUnwritten(eventKey, new Date(deps.clock().getTime() - UNWRITTEN_AFTER_MS));
    return 0;
  }
  if (event.dispatched || !event.type || !event.body) {
    await store.outbox.markDispatched(event._id);
    return 0;
  }
  const endpoints = subscribedEndpoints(await store.endpoints.live(event.organisationId), event);
  return dispatchEvent(deps, event, endpoints, requestId);
}
