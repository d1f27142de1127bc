import type { RedisClient } from '../../infra/redis.js';
import { redisKeys, type RedisKeys } from '../../infra/redis-keys.js';

/**
 * What the worker fleet shares about webhooks in Redis: the deliveries in flight per endpoint (so that one
 * slow endpoint cannot take every worker's slots), the delivery counters and the undelivered deliveries by
 * age (which the API's /metrics reads, since workers serve no HTTP). A process that counts outcomes has one
 * (`WebhookProcess`), which gathers its counts; a reader of the counters may make its own.
 */

// KEYS: in-flight set. ARGV: member, limit, lease ms. A lease per delivery, lapsing on its own if its worker dies.
const ACQUIRE = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1`;

// KEYS: in-flight set. ARGV: giver, taker, lease ms. The giver's place becomes the taker's lease, if the giver
// still held it (a lapsed lease is not handed over: its place may be someone else's by now).
const HAND_OVER = `if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1`;

// KEYS: counters, undelivered set. ARGV: counter field, delivery. A settled delivery's count and its leaving the
// undelivered set, together (a script rather than MULTI: an ioredis transaction is a pipeline, built anew per call).
const SETTLE = `redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('ZREM', KEYS[2], ARGV[2])
return 1`;

type Commands = {
  webhookSettle(counters: string, undelivered: string, field: string, delivery: string): Promise<number>;
  webhookSlot(key: string, member: string, limit: number, leaseMs: number): Promise<number>;
  webhookHandOver(key: string, giver: string, taker: string, leaseMs: number): Promise<number>;
};

export type DeliveryOutcome = 'delivered' | 'failed' | 'retried';

/**
 * How long a process gathers outcome counts before it adds them in Redis, together: a delivery's count
 * would otherwise be a call of its own (the metric lags by this much; a process that dies loses at most this
 * much of its counts, as a restarted process's own counters would).
 */
export const COUNT_EVERY_MS = 100;

/** Counts not yet added in Redis. */
type Tally = { counts: Map<string, number>; timer: NodeJS.Timeout | null };

export class WebhookFleetState {
  private readonly redis: RedisClient & Commands;
  private readonly keys: RedisKeys['webhooks'];
  /** The outcome counts this process gathered (`count`). */
  private readonly tally: Tally = { counts: new Map(), timer: null };

  /** `countEveryMs`: how long counts gather (`count`). */
  constructor(
    redis: RedisClient,
    prefix: string,
    private readonly countEveryMs = COUNT_EVERY_MS,
  ) {
    if (!('webhookSlot' in redis)) {
      redis.defineCommand('webhookSlot', { numberOfKeys: 1, lua: ACQUIRE });
      redis.defineCommand('webhookHandOver', { numberOfKeys: 1, lua: HAND_OVER });
      redis.defineCommand('webhookSettle', { numberOfKeys: 2, lua: SETTLE });
    }
    this.redis = redis as RedisClient & Commands;
    this.keys = redisKeys(prefix).webhooks;
  }

  private inFlightKey = (endpointId: string) => this.keys.inFlight(endpointId);
  private get countersKey() {
    return this.keys.counters;
  }
  private get undeliveredKey() {
    return this.keys.undelivered;
  }

  /** Takes one of the endpoint's in-flight places for a delivery (false: the endpoint is at its limit). */
  async takeSlot(endpointId: string, delivery: string, limit: number, leaseMs: number): Promise<boolean> {
    return (await this.redis.webhookSlot(this.inFlightKey(endpointId), delivery, limit, leaseMs)) === 1;
  }

  /** Hands the giver's place over to the taker, as a lease of its own (false: the giver's had lapsed). */
  async handOver(endpointId: string, giver: string, taker: string, leaseMs: number): Promise<boolean> {
    return (await this.redis.webhookHandOver(this.inFlightKey(endpointId), giver, taker, leaseMs)) === 1;
  }

  async releaseSlot(endpointId: string, delivery: string): Promise<void> {
    await this.redis.zrem(this.inFlightKey(endpointId), delivery);
  }

  /** A delivery waiting to be delivered, since its event occurred (kept until delivered or failed). */
  async waiting(delivery: string, occurredAt: Date): Promise<void> {
    await this.redis.zadd(this.undeliveredKey, 'NX', occurredAt.getTime(), delivery);
  }

  /**
   * Counts an outcome. `settled`: the delivery leaves the undelivered set, in the same script as its count;
   * otherwise the count is gathered with the process's others for `COUNT_EVERY_MS` (`flushCounts`).
   */
  async count(type: string, outcome: DeliveryOutcome, settled: string | null): Promise<void> {
    const field = `${type}|${outcome}`;
    if (settled) {
      await this.redis.webhookSettle(this.countersKey, this.undeliveredKey, field, settled);
      return;
    }
    this.tally.counts.set(field, (this.tally.counts.get(field) ?? 0) + 1);
    this.flushLater();
  }

  /** Adds the counts gathered in this process in Redis (kept for the next round if Redis fails). */
  async flushCounts(): Promise<void> {
    const tally = this.tally;
    if (tally.timer) clearTimeout(tally.timer);
    tally.timer = null;
    const counts = tally.counts;
    if (counts.size === 0) return;
    tally.counts = new Map();
    // Sent one after the other, not as a pipeline: an ioredis pipeline defines each of the connection's
    // scripts (BullMQ's) on itself, 0.04–0.07 ms of CPU each (64 scripts) for a handful of commands.
    const entries = [...counts];
    const results = await Promise.allSettled(
      entries.map(([field, n]) => this.redis.hincrby(this.countersKey, field, n)),
    );
    const failed = entries.filter((_, i) => results[i]!.status === 'rejected');
    if (failed.length === 0) return;
    for (const [field, n] of failed) tally.counts.set(field, (tally.counts.get(field) ?? 0) + n);
    this.flushLater();
  }

  private flushLater(): void {
    const tally = this.tally;
    if (tally.timer) return;
    tally.timer = setTimeout(() => void this.flushCounts(), this.countEveryMs);
    tally.timer.unref();
  }

  /** Delivery counts by event type and outcome. */
  async counters(): Promise<{ type: string; outcome: string; count: number }[]> {
    const raw = await this.redis.hgetall(this.countersKey);
    return Object.entries(raw).map(([field, count]) => {
      const [type, outcome] = field.split('|') as [string, string];
      return { type, outcome, count: Number(count) };
    });
  }

  /** Age in seconds of the oldest event with a delivery not yet delivered or failed (0 when none). */
  async oldestUndeliveredAgeSeconds(now: number = Date.now()): Promise<number> {
    const [, score] = await this.redis.zrange(this.undeliveredKey, 0, 0, 'WITHSCORES');
    return score === undefined ? 0 : Math.max(0, (now - Number(score)) / 1000);
  }
}
