import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import type { Types } from 'mongoose';

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const EXTEND = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

export type AccountLockOptions = { ttlMs?: number; waitMs?: number };

/**
 * A per-account mutex in Redis (SET NX PX with a token, released only by its holder) taken around changes of
 * an account's ledger journal. It only reduces contention: writers of one account take turns instead of
 * racing for the same journal entry and deciding again. Correctness never rests on it: the journal's unique
 * entry numbers settle every race (see `src/storage/journal/ledger-journal.ts`). So when Redis cannot be
 * reached, or the lock stays taken longer than `waitMs`, or it lapses under its holder, the work goes on
 * without it.
 *
 * Writers of one account that share these locks first queue behind each other here, so each takes the Redis
 * lock as the one before it lets go, instead of finding it taken and trying again 5–25 ms later (requests
 * for one account mostly reach one API process, e.g. a client sending an account's batches in turn): so a
 * process builds one, with its post-import context, for every step it runs. Writers of other processes still
 * meet in Redis. The wait in line counts towards `waitMs`.
 */
export class AccountLocks {
  /** The last in line for each account's lock among the writers sharing these locks. */
  private readonly line = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** The Redis key of an account's lock (tests use it to take the lock away from a holder). */
  key(accountId: Types.ObjectId): string {
    return redisKeys(this.prefix).accountLock(accountId.toHexString());
  }

  async with<T>(
    accountId: Types.ObjectId,
    fn: () => Promise<T>,
    { ttlMs = 15_000, waitMs = 5_000 }: AccountLockOptions = {},
  ): Promise<T> {
    const key = this.key(accountId);
    const deadline = Date.now() + waitMs;
    const before = this.line.get(key);
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const last = before ? before.then(() => mine) : mine;
    this.line.set(key, last);
    try {
      if (before) await waitUntil(before, deadline);
      return await this.inRedis(key, fn, ttlMs, deadline);
    } finally {
      done();
      if (this.line.get(key) === last) this.line.delete(key);
    }
  }

  private async inRedis<T>(key: string, fn: () => Promise<T>, ttlMs: number, deadline: number): Promise<T> {
    const token = randomUUID();
    let held: boolean;
    for (;;) {
      const taken = await this.redis.set(key, token, 'PX', ttlMs, 'NX').catch(() => 'unreachable' as const);
      held = taken === 'OK';
      // Taken by someone else (null): wait for it, up to `waitMs`; Redis unreachable: go on without it.
      if (taken !== null || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
    if (!held) return fn();
    const renew = setInterval(
      () => void this.redis.eval(EXTEND, 1, key, token, ttlMs).catch(() => undefined), // silent-ok: TTL bounds it
      Math.max(ttlMs / 3, 100),
    );
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      await this.redis.eval(RELEASE, 1, key, token).catch(() => undefined); // silent-ok: the lock lapses at its TTL
    }
  }
}

/** Waits for `turn`, or until `deadline` (epoch ms) if that comes first. */
async function waitUntil(turn: Promise<void>, deadline: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>(
    (resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))),
  );
  try {
    await Promise.race([turn, late]);
  } finally {
    clearTimeout(timer);
  }
}
