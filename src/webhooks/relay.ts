import type { Queue } from 'bullmq';
import type { RecordedEvent } from '../storage/process-events.js';
import { jobCatalog, jobId, retention } from '../jobs/catalog.js';

/**
 * Hands recorded events to the webhook queue at once (the fast path). Best effort: an event whose job could
 * not be queued (Redis down, a crash just after the write) is still `dispatched: false` in the outbox, and
 * the outbox sweep queues it later. The job id is the event's, so queueing twice runs it once.
 */
export async function relayEvents(
  queue: Queue,
  events: readonly (RecordedEvent | null | undefined)[],
  requestId: string,
): Promise<void> {
  const pending = events.filter((e): e is RecordedEvent => !!e && !e.dispatched);
  if (pending.length === 0) return;
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
