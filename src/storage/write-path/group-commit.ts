import type { Model } from 'mongoose';
import { isDatabaseUnavailable } from '../../infra/mongo.js';

/**
 * Group commit: concurrent callers' writes to one collection share a command. On FerretDB every command costs
 * the database far more than the document it carries (an insert command a transaction of its own; an update
 * about 0.1 ms of its CPU beside the statement's own 0.2 ms, measured with 4,000 updates by `_id`), so writes
 * are queued per collection and sent together: the first caller's go at once (no added latency when idle), and
 * whatever arrives while a command is in flight goes in the next one. Subclasses say how a round is sent and
 * how its outcome is shared out; each caller's retries and idempotency stay its own, as with a plain write.
 */

export type Pending<T, R> = {
  items: T[];
  resolve: (outcome: R) => void;
  reject: (err: unknown) => void;
};

/** Per-item errors a bulk command reports (`index` within the command). */
export type WriteError = { index: number; code?: number; err?: { code?: number } };

const MAX_ITEMS_PER_COMMAND = 1_000;

export abstract class GroupCommit<T, R> {
  private queue: Pending<T, R>[] = [];
  private inFlight = false;

  submit(items: T[]): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      if (!this.inFlight) void this.flush();
    });
  }

  /** Sends one round; settles every caller in it. */
  protected abstract send(round: Pending<T, R>[]): Promise<void>;

  /**
   * A command refused as a whole (no per-item errors: the driver's check of one item, or FerretDB failing the
   * command): each caller is sent again alone, so only the culprit fails; a round of one, or an outage, fails
   * them all at once.
   */
  protected async refusedWhole(round: Pending<T, R>[], err: unknown): Promise<void> {
    if (round.length < 2 || isDatabaseUnavailable(err)) {
      for (const p of round) p.reject(err);
      return;
    }
    for (const p of round) await this.send([p]);
  }

  private async flush(): Promise<void> {
    this.inFlight = true;
    try {
      while (this.queue.length > 0) await this.send(this.take());
    } finally {
      this.inFlight = false;
    }
  }

  /** Whole callers, up to the command limit (a caller larger than the limit goes alone). */
  private take(): Pending<T, R>[] {
    const round: Pending<T, R>[] = [];
    let count = 0;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (round.length > 0 && count + next.items.length > MAX_ITEMS_PER_COMMAND) break;
      round.push(this.queue.shift()!);
      count += next.items.length;
    }
    return round;
  }
}

/** One queue per collection and kind of write. */
export function queueFor<Q>(
  registry: WeakMap<object, Q>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any model: the caller built its writes for it
  model: Model<any>,
  make: (collection: never) => Q,
): Q {
  const collection = model.collection as object;
  let queue = registry.get(collection);
  if (!queue) {
    queue = make(collection as never);
    registry.set(collection, queue);
  }
  return queue;
}

/** A write of one document by `_id`, as the driver's bulk API takes it. */
type ByIdWrite = { updateOne: { filter: { _id: string }; update: { $set: Record<string, unknown> } } };

type RawBulk = {
  bulkWrite(ops: ByIdWrite[], options: { ordered: false }): Promise<unknown>;
};

/** Sets by `_id` (a round is one command). */
class SetQueue extends GroupCommit<ByIdWrite, void> {
  constructor(private readonly collection: RawBulk) {
    super();
  }

  protected async send(round: Pending<ByIdWrite, void>[]): Promise<void> {
    try {
      await this.collection.bulkWrite(
        round.flatMap((p) => p.items),
        { ordered: false },
      );
    } catch (err) {
      const writeErrors = (err as { writeErrors?: WriteError[] }).writeErrors;
      if (!writeErrors?.length) return this.refusedWhole(round, err);
      const failed = new Set(writeErrors.map((w) => w.index));
      let offset = 0;
      for (const p of round) {
        const mine = p.items.some((_, i) => failed.has(offset + i));
        offset += p.items.length;
        if (mine) p.reject(err);
        else p.resolve();
      }
      return;
    }
    for (const p of round) p.resolve();
  }
}

type RawDeletes = {
  deleteMany(filter: { _id: { $in: string[] } }): Promise<unknown>;
};

/**
 * Deletes by `_id`, a round as one statement: `{_id: {$in: [...]}}`. On FerretDB each statement of a bulk delete
 * is a read and a write transaction of its own, so statements cost what commands do; the project's FerretDB
 * build looks `$in` of `_id`s up in the index (`scripts/ferretdb-id-lookups.patch`), as MongoDB does.
 */
class DeleteQueue extends GroupCommit<string, void> {
  constructor(private readonly collection: RawDeletes) {
    super();
  }

  protected async send(round: Pending<string, void>[]): Promise<void> {
    try {
      await this.collection.deleteMany({ _id: { $in: round.flatMap((p) => p.items) } });
    } catch (err) {
      return this.refusedWhole(round, err);
    }
    for (const p of round) p.resolve();
  }
}

const setQueues = new WeakMap<object, SetQueue>();
const deleteQueues = new WeakMap<object, DeleteQueue>();

/**
 * Sets fields of one document by `_id` through the collection's shared queue (one `update` command per round,
 * its statements unordered). Nothing is cast and no timestamp is added: pass what is to be stored, `updatedAt`
 * included where the schema keeps it. For unconditional writes that any retry repeats: a statement of a round
 * that failed as a whole may have been applied before the caller's own attempt.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any model: the fields were built for it
export function batchedSet(model: Model<any>, _id: string, set: Record<string, unknown>): Promise<void> {
  return queueFor(setQueues, model, (c: RawBulk) => new SetQueue(c)).submit([
    { updateOne: { filter: { _id }, update: { $set: set } } },
  ]);
}

/** Deletes one document by `_id` through the collection's shared queue (one statement per round). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any model
export function batchedDelete(model: Model<any>, _id: string): Promise<void> {
  return queueFor(deleteQueues, model, (c: RawDeletes) => new DeleteQueue(c)).submit([_id]);
}
