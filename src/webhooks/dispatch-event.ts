import type { Job } from 'bullmq';
import { subscribedEndpoints, webhookStore } from '../storage/webhooks.js';
import { jobCatalog, jobId, retention, type JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { WebhookFleetState } from './fleet-state.js';

/** A delivery's job id (a replay adds its number, so it runs even after the first job finished). */
export const deliveryJobId = (delivery: string, replay = 0) =>
  replay === 0 ? jobId('deliver', delivery) : jobId('deliver', delivery, 'replay', String(replay));

/**
 * Fans a recorded import event out to its organisation's endpoints: one delivery per endpoint subscribed when
 * the event was recorded
 * (ids derived from event and endpoint, so a second dispatch of the same event adds none), one delivery job
 * each (ids derived from the delivery, so none is queued twice), then the event is marked dispatched. A
 * crash anywhere is repaired by running it again, which the job's retries and the outbox sweep do.
 */
export async function dispatchEventJob(
  data: JobData<'dispatch-event'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<{ deliveries: number }> {
  const store = webhookStore(ctx.db.models);
  const event = await store.event(data.eventKey);
  if (!event) return { deliveries: 0 };
  if (event.dispatched || !event.type || !event.body) return { deliveries: 0 };
  // The endpoints subscribed when the event was recorded: whether an endpoint added since gets it must not
  // depend on how soon the event is dispatched (at once by the relay, or much later by the outbox sweep).
  const endpoints = subscribedEndpoints(await store.liveEndpoints(event.organisationId), event);
  const ids = await store.createDeliveries(event, endpoints, ctx.clock());
  const fleet = new WebhookFleetState(ctx.redis, ctx.config.QUEUE_PREFIX);
  const spec = jobCatalog['deliver-webhook'];
  await Promise.all(
    ids.map(async (delivery) => {
      await fleet.waiting(delivery, event.occurredAt);
      await ctx
        .queue(spec.queue)
        .add(
          'deliver-webhook',
          { deliveryId: delivery, requestId: data.requestId },
          { ...spec.options, ...retention, jobId: deliveryJobId(delivery) },
        );
    }),
  );
  await store.markDispatched(event._id);
  return { deliveries: ids.length };
}
