import { EventEmitter } from 'node:events';
import type { RedisKeys } from './redis-keys.js';
import { logConnectionErrors, workerConnection, type RedisClient, type RedisSettings } from './redis.js';

/**
 * Early delivery of job results. A worker publishes a job's result on its own connection just before BullMQ
 * completes the job there, and a waiting API answers on the message instead of on the queue's `completed`
 * event, which comes only after the completion round trip and the event stream's. Best effort: a message
 * missed (no subscriber yet, a reconnect) leaves the `completed` event, which always follows.
 */
/** The event a result is emitted under by `JobResults`. */
export function resultKey(queue: string, jobId: string): string {
  return `${queue}:${jobId}`;
}

/** Sends without waiting: `via` orders it before what the worker sends next on that connection. */
export function publishResult(
  via: RedisClient,
  keys: RedisKeys,
  queue: string,
  jobId: string,
  result: unknown,
): void {
  if (result === undefined) return;
  via.publish(keys.jobResults, JSON.stringify({ queue, jobId, result })).catch(() => undefined);
}

/** The event under which `JobResults` tells that a job's attempt could not reach the database. */
export function unavailableKey(queue: string, jobId: string): string {
  return `unavailable:${queue}:${jobId}`;
}

/**
 * Tells a waiting API that the job could not reach the database and was put back to retry, so it can answer
 * 503 at once instead of waiting for an outage to end. Best effort, like results.
 */
export function publishUnavailable(via: RedisClient, keys: RedisKeys, queue: string, jobId: string): void {
  via.publish(keys.jobResults, JSON.stringify({ queue, jobId, unavailable: true })).catch(() => undefined);
}

/** One subscriber connection per API process; emits each result under `resultKey(queue, jobId)`. */
export class JobResults extends EventEmitter {
  private readonly subscriber: RedisClient;
  /** Settles once subscribed (or the first attempt failed; ioredis keeps trying). */
  readonly ready: Promise<void>;

  constructor(settings: RedisSettings, keys: RedisKeys, log: Parameters<typeof logConnectionErrors>[1]) {
    super();
    // Many waits at once, each on its own event name: no per-name listener limit is reached.
    this.setMaxListeners(0);
    this.subscriber = workerConnection(settings);
    logConnectionErrors(this.subscriber, log, 'job-results');
    // Queued until connected; ioredis subscribes again after every reconnect.
    this.ready = this.subscriber.subscribe(keys.jobResults).then(
      () => undefined,
      () => undefined,
    );
    this.subscriber.on('message', (_channel: string, message: string) => {
      let parsed: { queue?: unknown; jobId?: unknown; result?: unknown; unavailable?: unknown };
      try {
        parsed = JSON.parse(message) as typeof parsed;
      } catch {
        return;
      }
      if (typeof parsed.queue === 'string' && typeof parsed.jobId === 'string') {
        if (parsed.unavailable === true) this.emit(unavailableKey(parsed.queue, parsed.jobId));
        else this.emit(resultKey(parsed.queue, parsed.jobId), parsed.result);
      }
    });
  }

  close(): void {
    this.subscriber.disconnect();
  }
}
