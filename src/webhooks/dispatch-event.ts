import type { Job, Queue } from 'bullmq';
import type { RedisClient } from '../infra/redis.js';
import {
  subscribedEndpoints,
  webhookStore,
  type DispatchedEvent,
  type EndpointRow,
  type WebhookStore,
} from '../storage/webhooks.js';
import { deliveryJobOptions, jobCatalog, type JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { WebhookFleetState } from './fleet-state.js';
import type { DirectDeliveries } from './direct-deliveries.js';

/** What a dispatch needs: the webhook store, the fleet's Redis state and the webhook queue. */
export type DispatchDeps = {
  store: WebhookStore;
  redis: RedisClient;
  prefix: string;
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
  const now = deps.clock();
  const deliveries = await deps.store.createDeliveries(event, endpoints, now);
  const fleet = new WebhookFleetState(deps.redis, deps.prefix);
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
  await deps.store.markDispatched(event._id);
  return deliveries.length;
}

/** An outbox entry whose event is still missing this long after it was written belongs to no event. */
const UNWRITTEN_AFTER_MS = 60 * 60_000;

/**
 * The dispatch job: an event the relay could not dispatch itself (its writer did not know who is subscribed,
 * or the relay failed) or that the outbox sweep found undispatched. It goes to the endpoints subscribed when
 * it was recorded: whether an endpoint added since gets it must not depend on how soon it is dispatched.
 */
export async function dispatchEventJob(
  data: JobData<'dispatch-event'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ deliveries: number }> {
  const store = webhookStore(ctx.db.models);
  const event = await store.event(data.eventKey);
  // An entry with no event: its writer failed or died in between. Forgotten once the insert cannot be on its
  // way any more.
  if (!event) {
    await store.forgetUnwritten(data.eventKey, new Date(ctx.clock().getTime() - UNWRITTEN_AFTER_MS));
    return { deliveries: 0 };
  }
  if (event.dispatched || !event.type || !event.body) {
    await store.markDispatched(event._id);
    return { deliveries: 0 };
  }
  const endpoints = subscribedEndpoints(await store.liveEndpoints(event.organisationId), event);
  const deps = {
    store,
    redis: ctx.redis,
    prefix: ctx.config.QUEUE_PREFIX,
    queue: ctx.queue(jobCatalog['deliver-webhook'].queue),
    clock: ctx.clock,
  };
  return { deliveries: await dispatchEvent(deps, event, endpoints, data.requestId) };
}
