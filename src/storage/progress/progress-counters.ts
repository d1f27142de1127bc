import type { Logger } from 'pino';
import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import { processStatuses } from '../../domain/import-process/state.js';
import type { PendingChange, ProgressEntry } from './progress-entry.js';
import { CounterFailures } from './progress-failures.js';
import { withCommands, type Commands } from './progress-scripts.js';

/**
 * A supplier's cohort progress, kept in Redis by the state changes themselves (`process-events.ts`), so that
 * reading it costs the same for 100 accounts and for 1,000,000. The database is the record: what Redis holds
 * is derived from it, and rebuilt from it when Redis may have lost some of it (`progress/rebuild.ts`).
 *
 * Per supplier (every key under one hash tag, so each script runs on one Redis Cluster slot):
 * - `meta`: the epoch served (`cur`), the one being rebuilt (`next`), the Redis server that built the served one
 *   (`run`, its run id: a failover or restart changes it), `stale` (a change could not be counted).
 * - per epoch `<base>:<epoch>:`:
 *   - `idx`: one field per import process (its external account number): the position of the newest event
 *     counted (`q`), its status, error code and paths, kraken number, time. A change applies only when its
 *     position is newer than the one held, so applying an event twice, an older one after a newer, or the
 *     rebuild's read of the head changes nothing.
 *   - `counts`: the sums over `idx` (per status, `SKIPPED`, `f:<code>`, `a:<code>\t<path>`) and the post-import
 *     items (`p:<resource>`); a field that falls to 0 is removed.
 *   - `z:<STATUS>` and `z:<STATUS>:<code>`: the processes by status (and error code), scored by the time of their
 *     last change (the drill-down's keyset pages); `codes`: the error codes seen (to drop the epoch).
 *   - `m:<minute>`: accounts that reached PROCESSED (`P`) or ERRORED/DRY_RUN_ERRORED (`E`) in that minute.
 *   - `posted`: only while the epoch is being rebuilt: the post-import events it counted.
 * - `pending`: changes about to be written (added before the event's insert, removed with its count): what a
 *   crash between the two leaves here is counted by the next progress read (`repair`). A post-import event is
 *   counted by whoever removes its member, so once.
 *
 * Bounded: one entry per account of the cohort in `idx` and the drill-down sets, one field per status, error
 * code and path in `counts`, one member per change in flight in `pending`; nothing grows with the cohort's age
 * (the events, retries and post-import requests it has seen).
 */

/** Per-minute figures are kept this long (the page's chart shows the last hour). */
export const MINUTE_TTL_SECONDS = 2 * 60 * 60;

const flatToRecord = (flat: readonly string[] | undefined): Record<string, number> => {
  const out: Record<string, number> = {};
  for (let i = 0; i + 1 < (flat?.length ?? 0); i += 2) out[flat![i]!] = Number(flat![i + 1]);
  return out;
};

export type ProgressSnapshot = {
  /** The counts are being rebuilt from the database (or are about to be): not settled figures. */
  rebuilding: boolean;
  counts: Record<string, number>;
  minutes: { minute: number; P: number; E: number }[];
};

export type RebuildStart = { run: false } | { run: true; epoch: string } | { run: false; epoch: string };

export class ProgressCounters {
  private readonly redis: RedisClient & Commands;
  /** The updates this process could not make (its share of `progress_counter_failures_total`). */
  readonly failures: CounterFailures;

  constructor(
    redis: RedisClient,
    private readonly prefix: string,
    log: Pick<Logger, 'warn'> | null = null,
  ) {
    this.redis = withCommands(redis);
    this.failures = new CounterFailures(log, {
      markStale: (supplier) => this.redis.progressStale(this.meta(supplier), this.base(supplier)),
      addToFleet: (n) => this.redis.incrby(redisKeys(this.prefix).progressFailures(), n),
    });
  }

  /** The key prefix of one supplier (one hash tag). */
  base(supplier: string): string {
    return redisKeys(this.prefix).progress(supplier);
  }

  private meta(supplier: string): string {
    return `${this.base(supplier)}:meta`;
  }

  /** Counter updates that failed anywhere in the fleet (as reported once Redis answered again). */
  async fleetFailures(): Promise<number> {
    return Number((await this.redis.get(redisKeys(this.prefix).progressFailures())) ?? 0);
  }

  /** Notes a change about to be written; returns the member to pass to `apply` (null: not noted). */
  async intend(supplier: string, change: PendingChange): Promise<string | null> {
    const member = JSON.stringify(change);
    const added = await this.failures.guard(supplier, 'intend', () =>
      this.redis.zadd(`${this.base(supplier)}:pending`, Date.now(), member),
    );
    return added === null ? null : member;
  }

  /** Drops a noted change that was not written (its writer lost the race for the position). */
  async forget(supplier: string, member: string): Promise<void> {
    await this.failures.guard(supplier, 'forget', () =>
      this.redis.zrem(`${this.base(supplier)}:pending`, member),
    );
  }

  /** Applies a process's state (idempotent: only a newer position than the one held changes anything). */
  async apply(
    supplier: string,
    ext: string,
    entry: ProgressEntry,
    pending?: string | null,
  ): Promise<boolean> {
    const applied = await this.failures.guard(supplier, 'apply', () =>
      this.redis.progressApply(
        this.meta(supplier),
        this.base(supplier),
        ext,
        JSON.stringify(entry),
        pending ?? '',
        MINUTE_TTL_SECONDS,
        Date.now(),
      ),
    );
    return applied === 1;
  }

  async skip(supplier: string, ext: string, at: Date): Promise<void> {
    await this.failures.guard(supplier, 'skip', () =>
      this.redis.progressSkip(this.meta(supplier), this.base(supplier), ext, at.getTime()),
    );
  }

  /** Counts a post-import event once: by whoever removes its pending member (see the POST script). */
  async post(supplier: string, id: string, resource: string, count: number, pending: string): Promise<void> {
    await this.failures.guard(supplier, 'post', () =>
      this.redis.progressPost(this.meta(supplier), this.base(supplier), id, resource, count, pending),
    );
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

  /** The served counts and the per-minute figures for the minutes `[from, to]` (epoch minutes), in one read. */
  async snapshot(supplier: string, from: number, to: number): Promise<ProgressSnapshot> {
    const [, rebuilding, flat, minutes] = await this.redis.progressRead(
      this.meta(supplier),
      this.base(supplier),
      from,
      to,
    );
    return {
      rebuilding: rebuilding === 1,
      counts: flatToRecord(flat),
      minutes: Array.from({ length: to - from + 1 }, (_, i) => ({
        minute: from + i,
        P: Number(minutes[2 * i] ?? 0),
        E: Number(minutes[2 * i + 1] ?? 0),
      })),
    };
  }

  async counts(supplier: string): Promise<Record<string, number>> {
    return (await this.snapshot(supplier, 0, -1)).counts;
  }

  /** The epoch pages are read from: the served one, else the one being built. */
  private async epochBase(supplier: string): Promise<string | null> {
    const [cur, next] = await this.redis.hmget(this.meta(supplier), 'cur', 'next');
    const epoch = cur ?? next;
    return epoch ? `${this.base(supplier)}:${epoch}` : null;
  }

  /** One page of the processes of a status (and error code), oldest change first, after `(score, ext)`. */
  async page(
    supplier: string,
    status: string,
    code: string | undefined,
    after: { t: number; ext: string } | null,
    limit: number,
  ): Promise<{ ext: string; entry: ProgressEntry | null; t: number }[]> {
    const ep = await this.epochBase(supplier);
    if (!ep) return [];
    const key = `${ep}:z:${status}${code ? `:${code}` : ''}`;
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
    const entries = page.length > 0 ? await this.redis.hmget(`${ep}:idx`, ...page.map((p) => p.ext)) : [];
    return page.map((p, i) => ({
      ...p,
      entry: entries[i] ? (JSON.parse(entries[i]!) as ProgressEntry) : null,
    }));
  }

  // The rebuild (`progress/rebuild.ts`) -------------------------------------------------------------------

  /**
   * Whether the supplier's counts are to be rebuilt, and by whom: `{run: true, epoch}` when the caller is to
   * build that epoch, `{run: false, epoch}` when a rebuild is under way elsewhere (heard from within
   * `beatTimeoutMs`), `{run: false}` when the counts are settled. `force`: rebuild whatever they hold.
   */
  async beginRebuild(supplier: string, force: boolean, beatTimeoutMs: number): Promise<RebuildStart> {
    const [state, epoch] = await this.redis.progressBegin(
      this.meta(supplier),
      this.base(supplier),
      force ? '1' : '0',
      Date.now(),
      beatTimeoutMs,
    );
    if (state === 2) return { run: true, epoch: String(epoch) };
    if (state === 1) return { run: false, epoch: String(epoch) };
    return { run: false };
  }

  /** Applies heads read from the database to the epoch being built; false when it is no longer built. */
  async rebuildApply(supplier: string, epoch: string, entries: [string, ProgressEntry][]): Promise<boolean> {
    if (entries.length === 0) return true;
    const args = entries.flatMap(([ext, entry]) => [ext, JSON.stringify(entry)]);
    const applied = await this.redis.progressRebuildApply(
      this.meta(supplier),
      this.base(supplier),
      epoch,
      MINUTE_TTL_SECONDS,
      Date.now(),
      ...args,
    );
    return applied !== -1;
  }

  /** Counts post-import events found in the database in the epoch being built (once per event id). */
  async rebuildPost(
    supplier: string,
    epoch: string,
    events: { id: string; resource: string; count: number }[],
  ): Promise<boolean> {
    if (events.length === 0) return true;
    const args = events.flatMap((e) => [e.id, e.resource, String(e.count)]);
    const counted = await this.redis.progressRebuildPost(
      this.meta(supplier),
      this.base(supplier),
      epoch,
      Date.now(),
      ...args,
    );
    return counted !== -1;
  }

  /**
   * Serves the rebuilt epoch and drops the one it replaces. Returns what the replaced one counted and what
   * the rebuilt one counts, or null when the epoch could not be served (superseded, or built across a
   * failover: then it is marked stale and built again).
   */
  async finishRebuild(
    supplier: string,
    epoch: string,
  ): Promise<{ before: Record<string, number>; after: Record<string, number> } | null> {
    const [done, old, before, after] = await this.redis.progressFinish(
      this.meta(supplier),
      this.base(supplier),
      epoch,
      Date.now(),
    );
    if (done !== 1) return null;
    if (old) await this.redis.progressDrop(this.meta(supplier), this.base(supplier), old, ...drillKeys);
    return { before: flatToRecord(before), after: flatToRecord(after) };
  }
}

/** The drill-down sets an epoch may have, by status. */
const drillKeys = [...processStatuses, 'SKIPPED'];
