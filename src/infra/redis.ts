import { Redis, type RedisOptions } from 'ioredis';

/**
 * A producer-side connection: commands fail at once while Redis is down (no offline queue), so requests
 * answer 503 quickly instead of hanging; ioredis keeps reconnecting in the background. Never for blocking
 * commands (auto-pipelining would queue other commands behind them).
 */
export function producerConnection(url: string, extra: RedisOptions = {}): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    // Commands issued in the same tick (many requests or jobs at once) go out in one write.
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 1_000),
    ...extra,
  });
}

/** A worker-side connection: BullMQ workers block on Redis and must retry forever. */
export function workerConnection(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  });
}
