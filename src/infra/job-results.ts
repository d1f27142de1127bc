import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';
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

/**
 * One subscriber connection per API process; emits each result under `resultKey(queue, jobId)`. It subscribes
 * again itself after every reconnect, not through ioredis (`autoResubscribe`): ioredis sends that `subscribe`
 * with nobody listening to its promise, and a connection closed while it reconnects (between its ready check
 * and the reply, as at a shutdown just after a Redis restart) fails it as an unhandled rejection.
 */
export class JobResults extends EventEmitter {
  private readonly subscriber: RedisClient;
  private closing = false;
  /** Settles once subscribed (or the first attempt failed; ioredis keeps trying). */
  readonly ready: Promise<void>;

  constructor(settings: RedisSettings, keys: RedisKeys, log: Parameters<typeof logConnectionErrors>[1]) {
    super();
    // Many waits at once, each on its own event name: no per-name listener limit is reached.
    this.setMaxListeners(0);
    this.subscriber = workerConnection(settings, { autoResubscribe: false });
    logConnectionErrors(this.subscriber, log, 'job-results');
    const subscribe = () =>
      this.subscriber.subscribe(keys.jobResults).then(
        () => undefined,
        () => undefined,
      );
    // Queued until connected: the first `ready` sends it.
    this.ready = subscribe();
    let connected = false;
    this.subscriber.on('ready', () => {
      if (connected && !this.closing) void subscribe();
      connected = true;
    });
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

  /**
   * Closes the connection; resolves once its socket is closed (at once when it has none, reconnecting, or on a
   * cluster, whose nodes close on their own).
   */
  close(): Promise<void> {
    this.closing = true;
    const { subscriber } = this;
    const ended =
      subscriber instanceof Redis && ['connecting', 'connect', 'ready'].includes(subscriber.status)
        ? new Promise<void>((resolve) => subscriber.once('end', () => resolve()))
        : Promise.resolve();
    subscriber.disconnect();
    return ended;
  }
}
