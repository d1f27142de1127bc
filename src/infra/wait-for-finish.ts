import type { EventEmitter } from 'node:events';
import { Job, type Queue, type QueueEvents } from 'bullmq';
import { resultKey, unavailableKey } from './job-results.js';
import { DatabaseUnavailableError } from './mongo.js';

/**
 * Waits at most `waitMs` for the job to finish: its result, `timedOut`, or the failure as an Error (a
 * `DatabaseUnavailableError` as soon as the worker says it could not reach the database). Like
 * BullMQ's `waitUntilFinished` (listen first, then look whether it finished already), but every failure of
 * the lookup (Redis gone mid-wait) rejects this promise instead of escaping as an unhandled rejection.
 */
export function waitForFinish<R>(
  queueEvents: QueueEvents,
  queue: Queue,
  job: Job,
  waitMs: number,
  pending: Set<() => void>,
  /** Early results (`JobResults`): the first of the two answers. */
  direct?: EventEmitter,
  /**
   * Queues the job again (same id and data) when it is found gone from the queue while the wait goes on: a
   * Redis Cluster failover loses what the old master had not replicated, the job included. Looked for every
   * `everyMs`; a lookup that fails (Redis still failing over) is tried again at the next turn.
   */
  requeue?: { everyMs: number; add: () => Promise<unknown> },
): Promise<{ result: R | undefined; timedOut: boolean }> {
  const id = job.id!;
  // Per-job events (`completed:<id>`) are emitted by QueueEvents but absent from its typed listener map.
  const events = queueEvents as unknown as EventEmitter;
  return new Promise((resolve, reject) => {
    const onCompleted = ({ returnvalue }: { returnvalue: unknown }) =>
      end(() => resolve({ result: returnvalue as R, timedOut: false }));
    const onDirect = (returnvalue: unknown) => onCompleted({ returnvalue });
    const onFailed = ({ failedReason }: { failedReason: string }) =>
      end(() => reject(new Error(failedReason)));
    // The worker could not reach the database and put the job back: the caller answers 503 now.
    const onUnavailable = () => end(() => reject(new DatabaseUnavailableError()));
    const cancel = () => end(() => reject(new Error('the queue is closing')));
    const timer = setTimeout(() => end(() => resolve({ result: undefined, timedOut: true })), waitMs);
    let ended = false;
    let looking = false;
    const watch = requeue
      ? setInterval(() => {
          if (looking) return;
          looking = true;
          job
            .getState()
            .then((state) => (state === 'unknown' && !ended ? requeue.add() : undefined))
            .catch(() => undefined)
            .finally(() => (looking = false));
        }, requeue.everyMs)
      : null;
    watch?.unref();
    function end(settle: () => void) {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      if (watch) clearInterval(watch);
      events.off(`completed:${id}`, onCompleted);
      events.off(`failed:${id}`, onFailed);
      direct?.off(resultKey(queue.name, id), onDirect);
      direct?.off(unavailableKey(queue.name, id), onUnavailable);
      pending.delete(cancel);
      settle();
    }
    events.on(`completed:${id}`, onCompleted);
    events.on(`failed:${id}`, onFailed);
    direct?.on(resultKey(queue.name, id), onDirect);
    direct?.on(unavailableKey(queue.name, id), onUnavailable);
    pending.add(cancel);
    // A job that finished before the listeners were in place (a joined job, a very fast worker).
    job
      .getState()
      .then(async (state) => {
        if (state !== 'completed' && state !== 'failed') return;
        const finished = await Job.fromId(queue, id);
        if (!finished) return;
        if (state === 'completed') onCompleted({ returnvalue: finished.returnvalue });
        else onFailed({ failedReason: finished.failedReason });
      })
      .catch((err: unknown) => end(() => reject(err)));
  });
}
