import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { logConnectionErrors, workerConnection } from './redis.js';

/**
 * Early delivery of job results. A worker publishes a job's result on its own connection just before BullMQ
 * completes the job there, and a waiting API answers on the message instead of on the queue's `completed`
 * event, which comes only after the completion round trip and the event stream's. Best effort: a message
 * missed (no subscriber yet, a reconnect) leaves the `completed` event, which always follows.
 */
export function resultsChannel(prefix: string): string {
  return `${prefix}:job-results`;
}

/** The event a result is emitted under by `JobResults`. */
export function resultKey(queue: string, jobId: string): string {
  return `${queue}:${jobId}`;
}

/** Sends without waiting: `via` orders it before what the worker sends next on that connection. */
export function publishResult(
  via: Redis,
  prefix: string,
  queue: string,
  jobId: string,
  result: unknown,
): void {
  if (result === undefined) return;
  via.publish(resultsChannel(prefix), JSON.stringify({ queue, jobId, result })).catch(() => undefined);
}

/** One subscriber connection per API process; emits each result under `resultKey(queue, jobId)`. */
export class JobResults extends EventEmitter {
  private readonly subscriber: Redis;
  /** Settles once subscribed (or the first attempt failed; ioredis keeps trying). */
  readonly ready: Promise<void>;

  constructor(url: string, prefix: string, log: Parameters<typeof logConnectionErrors>[1]) {
    super();
    // Many waits at once, each on its own event name: no per-name listener limit is reached.
    this.setMaxListeners(0);
    this.subscriber = workerConnection(url);
    logConnectionErrors(this.subscriber, log, 'job-results');
    // Queued until connected; ioredis subscribes again after every reconnect.
    this.ready = this.subscriber.subscribe(resultsChannel(prefix)).then(
      () => undefined,
      () => undefined,
    );
    this.subscriber.on('message', (_channel: string, message: string) => {
      let parsed: { queue?: unknown; jobId?: unknown; result?: unknown };
      try {
        parsed = JSON.parse(message) as typeof parsed;
      } catch {
        return;
      }
      if (typeof parsed.queue === 'string' && typeof parsed.jobId === 'string') {
        this.emit(resultKey(parsed.queue, parsed.jobId), parsed.result);
      }
    });
  }

  close(): void {
    this.subscriber.disconnect();
  }
}
