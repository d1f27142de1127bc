import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Types } from 'mongoose';
import { ApiError } from '../api/errors.js';

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const EXTEND = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

export type LedgerLockOptions = { ttlMs?: number; waitMs?: number };

/**
 * A per-ledger mutex in Redis (SET NX PX with a token, released only by its holder).
 * Why not a conditional update in the database: FerretDB v1 (SQLite) applies an update as read, modify,
 * write back the whole document without isolation, so concurrent `$inc`, `$max` or compare-and-set
 * updates of one document lose writes. Every write to a ledger document therefore happens under this lock;
 * inserts stay lock-free because unique indexes are enforced by the storage engine. A live holder keeps
 * extending its lock (ledger balances are updated incrementally, so two holders at once would lose money);
 * a crashed holder's lock lapses after `ttlMs`, and the next holder repairs what it left (ledger-balance.ts).
 */
export class LedgerLocks {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async with<T>(
    ledgerId: Types.ObjectId,
    fn: () => Promise<T>,
    { ttlMs = 15_000, waitMs = 10_000 }: LedgerLockOptions = {},
  ): Promise<T> {
    const key = `${this.prefix}:ledger-lock:${ledgerId.toHexString()}`;
    const token = randomUUID();
    const deadline = Date.now() + waitMs;
    for (;;) {
      const taken = await this.redis.set(key, token, 'PX', ttlMs, 'NX').catch(() => {
        throw new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
      });
      if (taken === 'OK') break;
      if (Date.now() > deadline)
        throw new ApiError('service_unavailable', {
          detail: 'The ledger is busy. Retry shortly.',
          headers: { 'retry-after': '1' },
        });
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
    const renew = setInterval(
      () => {
        this.redis.eval(EXTEND, 1, key, token, ttlMs).catch(() => undefined);
      },
      Math.max(ttlMs / 3, 100),
    );
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      await this.redis.eval(RELEASE, 1, key, token).catch(() => undefined);
    }
  }
}
