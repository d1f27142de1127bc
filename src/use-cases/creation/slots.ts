import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import { processKey } from '../../storage/processes/process-key.js';

/**
 * The global limit on accounts being created at once, shared by every API pod and worker.
 *
 * One Redis sorted set per deployment (per queue prefix): member = the account's key (`slotMember`), score = the time
 * (Redis server clock, ms) at which the slot lapses. Holders renew their slot while they work (the API while
 * it waits for the job, the worker while it runs it), so a crashed holder's slot lapses on its own after
 * the lease. Every decision is one Lua script, so "count, compare, add" is atomic across processes.
 * The member being the account's key also makes the set the lock against a second create of the same account.
 */
const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: slots, peak, attempts, done. ARGV: member, limit (0 = none), lease ms, mode ('api' | 'worker'), claim.
// Returns {status, in_flight, attempt, claimed, done}: status 1 taken (or renewed, worker mode), 0 limit
// reached, -1 already held (api mode). `attempt` is the account's create attempt (see
// `CreationSlots.claimAttempt`); with claim = '1', an account that never had one gets its first in the same
// step (claimed = 1), which saves the common first create two round trips. `done` is the last attempt whose
// job finished (see FINISH).
const ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local lease = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if ARGV[4] == 'api' then return {-1, redis.call('ZCARD', KEYS[1]), 0, 0, 0} end
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  return {1, redis.call('ZCARD', KEYS[1]), 0, 0, 0}
end
local card = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[2])
if limit > 0 and card >= limit then return {0, card, 0, 0, 0} end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
card = card + 1
if card > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], card) end
if ARGV[4] ~= 'api' then return {1, card, 0, 0, 0} end
local attempt = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if attempt == 0 and ARGV[5] == '1' then return {1, card, redis.call('HINCRBY', KEYS[3], ARGV[1], 1), 1, 0} end
return {1, card, attempt, 0, tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '0')}`;

// KEYS: slots, done. ARGV: member, the finished job's attempt (0: a dry run, none). Frees the slot and records
// that the attempt's job is over, in one step: whoever takes the slot next knows the job is finished even
// before BullMQ has moved it to completed.
const FINISH = `redis.call('ZREM', KEYS[1], ARGV[1])
local attempt = tonumber(ARGV[2])
if attempt > tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then redis.call('HSET', KEYS[2], ARGV[1], attempt) end
return 1`;

// Renews only a slot that is still held: a late heartbeat must never resurrect a released slot.
const RENEW = `${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0`;

const HELD = `${NOW}
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) > now then return 1 end
return 0`;

const IN_FLIGHT = `${NOW}
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')`;

// KEYS: attempts. ARGV: member, the attempt the caller saw. Moves to the next attempt only if no one else
// did since; either way returns the current one, so two racing claims join the same job.
const CLAIM = `local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current == tonumber(ARGV[2]) then current = redis.call('HINCRBY', KEYS[1], ARGV[1], 1) end
return current`;

// KEYS: attempts. ARGV: member, an attempt whose job exists. Raises the counter to it (never lowers it).
const RESTORE = `local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if current < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1`;

type SlotCommands = {
  slotAcquire(
    slots: string,
    peak: string,
    attempts: string,
    done: string,
    member: string,
    limit: number,
    leaseMs: number,
    mode: string,
    claim: string,
  ): Promise<[number, number, number, number, number]>;
  slotFinish(slots: string, done: string, member: string, attempt: number): Promise<number>;
  slotRenew(slots: string, member: string, leaseMs: number): Promise<number>;
  slotHeld(slots: string, member: string): Promise<number>;
  slotInFlight(slots: string): Promise<number>;
  slotClaimAttempt(attempts: string, member: string, seen: number): Promise<number>;
  slotRestoreAttempt(attempts: string, member: string, attempt: number): Promise<number>;
};

function withCommands(redis: RedisClient): RedisClient & SlotCommands {
  if (!('slotAcquire' in redis)) {
    redis.defineCommand('slotAcquire', { numberOfKeys: 4, lua: ACQUIRE });
    redis.defineCommand('slotFinish', { numberOfKeys: 2, lua: FINISH });
    redis.defineCommand('slotRenew', { numberOfKeys: 1, lua: RENEW });
    redis.defineCommand('slotHeld', { numberOfKeys: 1, lua: HELD });
    redis.defineCommand('slotInFlight', { numberOfKeys: 1, lua: IN_FLIGHT });
    redis.defineCommand('slotClaimAttempt', { numberOfKeys: 1, lua: CLAIM });
    redis.defineCommand('slotRestoreAttempt', { numberOfKeys: 1, lua: RESTORE });
  }
  return redis as RedisClient & SlotCommands;
}

/** The slot (and lock) of one account: its process key, known before any lookup. */
export function slotMember(importSupplier: string, externalAccountNumber: string): string {
  return processKey(importSupplier, externalAccountNumber);
}

export type AcquireResult = {
  status: 'taken' | 'limit_reached' | 'already_held';
  inFlight: number;
  /** API mode, when taken: the account's create attempt, and whether this call claimed it (the first). */
  attempt: number;
  claimed: boolean;
  /** API mode, when taken and not claimed: the last attempt whose job finished (see `finish`). */
  done: number;
};

export type SlotSettings = {
  QUEUE_PREFIX: string;
  ACCOUNT_CREATION_CONCURRENCY: number;
  ACCOUNT_CREATION_SLOT_LEASE_MS: number;
};

export class CreationSlots {
  private readonly redis: RedisClient & SlotCommands;
  private readonly key: string;
  private readonly peakKey: string;
  private readonly attemptsKey: string;
  private readonly doneKey: string;
  readonly limit: number;
  readonly leaseMs: number;

  constructor(redis: RedisClient, settings: SlotSettings) {
    this.redis = withCommands(redis);
    const keys = redisKeys(settings.QUEUE_PREFIX).creationSlots;
    this.key = keys.slots;
    this.peakKey = keys.peak;
    this.attemptsKey = keys.attempts;
    this.doneKey = keys.done;
    this.limit = settings.ACCOUNT_CREATION_CONCURRENCY;
    this.leaseMs = settings.ACCOUNT_CREATION_SLOT_LEASE_MS;
  }

  /**
   * `api`: a new creation; refused when the account already holds a slot (a create is running). With
   * `claimFirst`, an account that never had a create attempt claims its first in the same step.
   * `worker`: the job's own slot; renewed when held, else taken again if the limit allows.
   */
  async acquire(
    member: string,
    mode: 'api' | 'worker',
    options: { claimFirst?: boolean } = {},
  ): Promise<AcquireResult> {
    const [status, inFlight, attempt, claimed, done] = await this.redis.slotAcquire(
      this.key,
      this.peakKey,
      this.attemptsKey,
      this.doneKey,
      member,
      this.limit,
      this.leaseMs,
      mode,
      options.claimFirst ? '1' : '0',
    );
    return {
      status: status === 1 ? 'taken' : status === 0 ? 'limit_reached' : 'already_held',
      inFlight,
      attempt,
      claimed: claimed === 1,
      done,
    };
  }

  async renew(member: string): Promise<boolean> {
    return (await this.redis.slotRenew(this.key, member, this.leaseMs)) === 1;
  }

  async release(member: string): Promise<void> {
    await this.redis.zrem(this.key, member);
  }

  /**
   * A job's end: frees its slot and records its attempt (0 for a dry run) as finished. `via` sends the command
   * on another connection, to order it with that connection's commands.
   */
  async finish(member: string, attempt: number, via: RedisClient = this.redis): Promise<void> {
    await withCommands(via).slotFinish(this.key, this.doneKey, member, attempt);
  }

  async isHeld(member: string): Promise<boolean> {
    return (await this.redis.slotHeld(this.key, member)) === 1;
  }

  async inFlight(): Promise<number> {
    return this.redis.slotInFlight(this.key);
  }

  /**
   * Moves the account to the attempt after `seen`, unless another claim already did; returns the attempt.
   * Attempts count the real (non-dry-run) creates accepted for an account and are part of each create job's
   * deterministic id. They are kept in Redis next to the slot and the jobs themselves (never expiring, so an
   * id is never reused while a job keeps it), so choosing the id costs no database round trip.
   */
  async claimAttempt(member: string, seen: number): Promise<number> {
    return this.redis.slotClaimAttempt(this.attemptsKey, member, seen);
  }

  /**
   * Makes sure the counter is at least `attempt`: the job of that attempt is being queued again after a
   * failover lost it, maybe with the claim that chose its id, so a later create must not claim the id again.
   */
  async restoreAttempt(member: string, attempt: number): Promise<void> {
    await this.redis.slotRestoreAttempt(this.attemptsKey, member, attempt);
  }

  /** The highest number of slots ever held at once (for operators and the scale-out test). */
  async peak(): Promise<number> {
    return Number((await this.redis.get(this.peakKey)) ?? 0);
  }

  /**
   * Renews the slot every third of the lease until stopped. `onLost` is told when renewing fails (Redis
   * unreachable), so a waiting request can answer at once instead of hanging.
   */
  keepAlive(member: string, onLost?: (err: unknown) => void, everyMs = this.leaseMs / 3): () => void {
    const timer = setInterval(
      () => {
        this.renew(member).catch((err: unknown) => onLost?.(err));
      },
      Math.max(200, Math.floor(Math.min(everyMs, this.leaseMs / 3))),
    );
    timer.unref();
    return () => clearInterval(timer);
  }
}
