import type { RedisClient } from '../infra/redis.js';
import { redisKeys } from '../infra/redis-keys.js';
import type { ProcessState } from '../domain/import-process/state.js';
import { withCommands, type Commands } from './progress-scripts.js';

/**
 * A supplier's cohort progress, kept in Redis by the state changes themselves (`process-events.ts`), so that
 * reading it costs the same for 100 accounts and for 1,000,000.
 *
 * Per supplier (every key under one hash tag, so each script runs on one Redis Cluster slot):
 * - `idx`: one field per import process (its external account number) holding what the counts hold of it:
 *   the position of the newest event counted (`q`), its status, error code and paths, kraken number, time.
 *   A change is applied only when its position is newer than the one held: applying an event twice, applying
 *   an older one after a newer, or applying the process's head again (the repair) changes nothing. So the
 *   counts are idempotent per event, and a lost application is made good by any later one of the process.
 * - `counts`: the sums over `idx` (per status, `SKIPPED`, `f:<code>`, `a:<code>\t<path>`, `p:<resource>`).
 * - `z:<STATUS>` and `z:<STATUS>:<code>`: the processes by status (and error code), scored by the time of
 *   their last change: the drill-down's keyset pages.
 * - `m:<minute>`: accounts that reached PROCESSED (`P`) or ERRORED/DRY_RUN_ERRORED (`E`) in that minute.
 * - `pending`: changes about to be written (added before the event's insert, removed with its application):
 *   what a crash between the two leaves here is repaired by the next progress read (`repair`), which applies
 *   the process's head as read from its history.
 * - `posted`: the post-import events counted (an event recorded twice counts once).
 */

export type ProgressEntry = {
  /** Position of the newest event counted (-1: none, e.g. skipped before anything was staged). */
  q: number;
  /** v2 status, '' when none (only for a skipped process). */
  s: string;
  /** latest_error.code when ERRORED or DRY_RUN_ERRORED, else ''. */
  c: string;
  /** The paths of that failure, each once. */
  a: string[];
  /** Time of the last change, epoch ms. */
  t: number;
  /** Kraken account number when PROCESSED, else ''. */
  k: string;
  /** latest_error as JSON text, '' when none. */
  e: string;
  /** 1: marked skipped by an operator (counted apart). */
  x: number;
};

export type PendingChange =
  | { kind: 'event'; ext: string; seq: number; writer: string }
  | { kind: 'post'; id: string; resource: string; count: number };

const MINUTE_TTL_SECONDS = 2 * 60 * 60;

/** What the counts hold of a process whose history's head is `state` (null: nothing to count). */
export function entryOf(
  state: ProcessState,
  fallback: { krakenAccountNumber?: string | null; staged?: boolean; at?: Date } = {},
): ProgressEntry | null {
  const status =
    state.status ?? (fallback.krakenAccountNumber ? 'PROCESSED' : fallback.staged ? 'PENDING' : null);
  if (!status) return null;
  const failed = status === 'ERRORED' || status === 'DRY_RUN_ERRORED';
  const errors = failed ? (state.latestEvent?.data.errors as { attr?: unknown }[] | undefined) : undefined;
  const paths = [
    ...new Set((errors ?? []).map((e) => e.attr).filter((a): a is string => typeof a === 'string')),
  ];
  return {
    q: state.seq,
    s: status,
    c: failed ? (state.latestError?.code ?? 'unknown') : '',
    a: paths,
    t: (state.latestEvent?.occurredAt ?? fallback.at ?? new Date(0)).getTime(),
    k: status === 'PROCESSED' ? (state.krakenAccountNumber ?? fallback.krakenAccountNumber ?? '') : '',
    e: state.latestError ? JSON.stringify(state.latestError) : '',
    x: 0,
  };
}

export class ProgressCounters {
  private readonly redis: RedisClient & Commands;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.redis = withCommands(redis);
  }

  /** The key prefix of one supplier (one hash tag). */
  base(supplier: string): string {
    return redisKeys(this.prefix).progress(supplier);
  }

  /** Notes a change about to be written; returns the member to pass to `apply`. */
  async intend(supplier: string, change: PendingChange): Promise<string> {
    const member = JSON.stringify(change);
    await this.redis.zadd(`${this.base(supplier)}:pending`, Date.now(), member);
    return member;
  }

  /** Drops a noted change that was not written (its writer lost the race for the position). */
  async forget(supplier: string, member: string): Promise<void> {
    await this.redis.zrem(`${this.base(supplier)}:pending`, member);
  }

  /** Applies a process's state (idempotent: only a newer position than the one held changes anything). */
  async apply(
    supplier: string,
    ext: string,
    entry: ProgressEntry,
    options: { pending?: string; force?: boolean } = {},
  ): Promise<boolean> {
    const base = this.base(supplier);
    const applied = await this.redis.progressApply(
      `${base}:idx`,
      base,
      ext,
      JSON.stringify(entry),
      options.pending ?? '',
      MINUTE_TTL_SECONDS,
      options.force ? '1' : '0',
    );
    return applied === 1;
  }

  async skip(supplier: string, ext: string, at: Date): Promise<void> {
    const base = this.base(supplier);
    await this.redis.progressSkip(`${base}:idx`, base, ext, at.getTime());
  }

  async post(supplier: string, id: string, resource: string, count: number, pending: string): Promise<void> {
    const base = this.base(supplier);
    await this.redis.progressPost(`${base}:posted`, base, id, resource, count, pending);
  }

  /** Changes noted more than `olderThanMs` ago and not applied (at most `limit`). */
  async pending(
    supplier: string,
    olderThanMs: number,
    limit: number,
  ): Promise<{ member: string; change: PendingChange; at: number }[]> {
    const raw = await this.redis.zrangebyscore(
      `${this.base(supplier)}:pending`,
      '-inf',
      Date.now() - olderThanMs,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const out: { member: string; change: PendingChange; at: number }[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      out.push({ member: raw[i]!, change: JSON.parse(raw[i]!) as PendingChange, at: Number(raw[i + 1]) });
    }
    return out;
  }

  async counts(supplier: string): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(`${this.base(supplier)}:counts`);
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(raw)) out[k] = Number(v);
    return out;
  }

  /** Per-minute PROCESSED (`P`) and errored (`E`) counts for the minutes `[from, to]` (epoch minutes). */
  async minutes(
    supplier: string,
    from: number,
    to: number,
  ): Promise<{ minute: number; P: number; E: number }[]> {
    const base = this.base(supplier);
    const pipeline = this.redis.pipeline();
    for (let m = from; m <= to; m++) pipeline.hgetall(`${base}:m:${m}`);
    const replies = (await pipeline.exec()) ?? [];
    return replies.map(([, value], i) => {
      const v = (value ?? {}) as Record<string, string>;
      return { minute: from + i, P: Number(v.P ?? 0), E: Number(v.E ?? 0) };
    });
  }

  /** One page of the processes of a status (and error code), oldest change first, after `(score, ext)`. */
  async page(
    supplier: string,
    status: string,
    code: string | undefined,
    after: { t: number; ext: string } | null,
    limit: number,
  ): Promise<{ ext: string; entry: ProgressEntry | null; t: number }[]> {
    const base = this.base(supplier);
    const key = `${base}:z:${status}${code ? `:${code}` : ''}`;
    let start = 0;
    if (after) {
      // Keyset: the rank just after the cursor's member, found in O(log N) at any depth. A member that has
      // moved since (changed status) is placed by its score: those before it, and those of its score up to it.
      const [rank, score] = await Promise.all([
        this.redis.zrank(key, after.ext),
        this.redis.zscore(key, after.ext),
      ]);
      if (rank !== null && Number(score) === after.t) start = rank + 1;
      else {
        const before = await this.redis.zcount(key, '-inf', `(${after.t}`);
        const same = await this.redis.zrangebyscore(key, after.t, after.t);
        start = before + same.filter((ext) => ext <= after.ext).length;
      }
    }
    const raw = await this.redis.zrange(key, start, start + limit, 'WITHSCORES');
    const page: { ext: string; t: number }[] = [];
    for (let i = 0; i < raw.length; i += 2) page.push({ ext: raw[i]!, t: Number(raw[i + 1]) });
    const entries = page.length > 0 ? await this.redis.hmget(`${base}:idx`, ...page.map((p) => p.ext)) : [];
    return page.map((p, i) => ({
      ...p,
      entry: entries[i] ? (JSON.parse(entries[i]!) as ProgressEntry) : null,
    }));
  }

  /** Every process the counts hold, read in batches (the rebuild's comparison). */
  async *entries(supplier: string): AsyncGenerator<[string, ProgressEntry]> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(`${this.base(supplier)}:idx`, cursor, 'COUNT', 1000);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) yield [flat[i]!, JSON.parse(flat[i + 1]!) as ProgressEntry];
    } while (cursor !== '0');
  }

  async removeEntry(supplier: string, ext: string): Promise<void> {
    // Applying "nothing" over it: the script removes what it held and adds an empty entry; then it is deleted.
    const none: ProgressEntry = { q: -1, s: '', c: '', a: [], t: 0, k: '', e: '', x: 0 };
    await this.apply(supplier, ext, none, { force: true });
    await this.redis.hdel(`${this.base(supplier)}:idx`, ext);
  }

  /** Resets the counts hash to `counts` and the post-import events counted to `posted` (the rebuild). */
  async resetCounts(supplier: string, counts: Record<string, number>, posted: string[]): Promise<void> {
    const base = this.base(supplier);
    const multi = this.redis.multi();
    multi.del(`${base}:counts`);
    const flat = Object.entries(counts).filter(([, v]) => v !== 0);
    if (flat.length > 0)
      multi.hset(`${base}:counts`, Object.fromEntries(flat.map(([k, v]) => [k, String(v)])));
    multi.del(`${base}:posted`);
    if (posted.length > 0) multi.hset(`${base}:posted`, Object.fromEntries(posted.map((id) => [id, '1'])));
    await multi.exec();
  }
}

const attached = new WeakMap<object, ProgressCounters>();

/**
 * Connects the progress counters of one set of models to Redis: done once per process at boot (API, workers,
 * the admin CLI). Without it state changes are recorded as before and the counts are left to a rebuild.
 */
export function attachProgressCounters(models: object, redis: RedisClient, prefix: string): ProgressCounters {
  let counters = attached.get(models);
  if (!counters) {
    counters = new ProgressCounters(redis, prefix);
    attached.set(models, counters);
  }
  return counters;
}

export function progressCountersOf(models: object): ProgressCounters | null {
  return attached.get(models) ?? null;
}
