import type { Model } from 'mongoose';
import { isDuplicateKey } from '../../infra/mongo.js';
import { GroupCommit, queueFor, type Pending, type WriteError } from './group-commit.js';

/**
 * Group commit for inserts (see `group-commit.ts`). Concurrent callers (the 50 creations a worker runs at
 * once, the stages an API pod answers at once) insert into the same few collections; each insert command
 * costs the database a transaction of its own, which on FerretDB's SQLite backend costs ten times the
 * document it carries. So inserts into one collection are sent as one unordered `insertMany` per round. Each
 * caller learns, per document, whether it was inserted or already there (duplicate key); any other failure
 * rejects exactly the callers whose documents it concerns (a command refused as a whole is split into one per
 * caller), so retries and idempotency stay each caller's own, as with a plain insert.
 *
 * Documents go to the driver as they are (no mongoose casting, defaults or validation): build them complete
 * with `completeDocument`.
 */

export type InsertOutcome = 'inserted' | 'duplicate';

// A model's collection: mongoose's wrapper around the driver's (it waits for the connection).
type RawCollection = {
  insertMany(docs: object[], options: { ordered: false }): Promise<unknown>;
};

class InsertQueue extends GroupCommit<object, InsertOutcome[]> {
  constructor(private readonly collection: RawCollection) {
    super();
  }

  protected async send(round: Pending<object, InsertOutcome[]>[]): Promise<void> {
    const docs = round.flatMap((p) => p.items);
    const failures = new Map<number, WriteError>();
    try {
      await this.collection.insertMany(docs, { ordered: false });
    } catch (err) {
      const writeErrors = (err as { writeErrors?: WriteError[] }).writeErrors;
      // A caller whose documents the first command did write finds them as duplicates when sent again alone,
      // as after any retried insert.
      if (!writeErrors?.length) return this.refusedWhole(round, err);
      for (const w of writeErrors) failures.set(w.index, w);
      // Which caller a failed document belongs to, and whether anything but duplicates failed for it.
      let offset = 0;
      for (const p of round) {
        const outcomes: InsertOutcome[] = [];
        let failed = false;
        for (let i = 0; i < p.items.length; i++) {
          const w = failures.get(offset + i);
          if (!w) outcomes.push('inserted');
          else if (isDuplicateKey({ code: w.code ?? w.err?.code })) outcomes.push('duplicate');
          else failed = true;
        }
        offset += p.items.length;
        if (failed) p.reject(err);
        else p.resolve(outcomes);
      }
      return;
    }
    for (const p of round) p.resolve(p.items.map(() => 'inserted'));
  }
}

const queues = new WeakMap<object, InsertQueue>();

/**
 * Inserts `docs` (complete documents, see `completeDocument`) through the collection's shared queue. Resolves
 * with one outcome per document; rejects when any of them failed for another reason than a duplicate key.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any model: the documents were built for it
export function batchedInsert(model: Model<any>, docs: object[]): Promise<InsertOutcome[]> {
  if (docs.length === 0) return Promise.resolve([]);
  return queueFor(queues, model, (c: RawCollection) => new InsertQueue(c)).submit(docs);
}

type Defaults = { paths: Array<[string, unknown]>; timestamps: boolean; versionKey: string | null };

const defaultsByModel = new WeakMap<object, Defaults>();

function defaultsOf(model: Model<unknown>): Defaults {
  let defaults = defaultsByModel.get(model.schema);
  if (!defaults) {
    const paths: Array<[string, unknown]> = [];
    model.schema.eachPath((path, type) => {
      const value = (type as unknown as { defaultValue?: unknown }).defaultValue;
      if (value !== undefined && !path.includes('.')) paths.push([path, value]);
    });
    const options = model.schema.options as { timestamps?: unknown; versionKey?: string | false };
    defaults = {
      paths,
      timestamps: options.timestamps === true,
      versionKey: options.versionKey === false ? null : (options.versionKey ?? '__v'),
    };
    defaultsByModel.set(model.schema, defaults);
  }
  return defaults;
}

/**
 * What mongoose would store for `doc` on a plain insert: every schema default the document does not set,
 * the timestamps and the version key. For inserts that bypass mongoose (`batchedInsert`); a test keeps each
 * record builder's output equal to mongoose's own cast of it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any model: the document was built for it
export function completeDocument<T extends object>(model: Model<any>, doc: T, now: Date): T {
  const { paths, timestamps, versionKey } = defaultsOf(model);
  const out: Record<string, unknown> = { ...(doc as Record<string, unknown>) };
  for (const [path, value] of paths) {
    if (out[path] !== undefined) continue;
    const v = typeof value === 'function' ? (value as () => unknown)() : value;
    out[path] = Array.isArray(v) ? [...(v as unknown[])] : v;
  }
  if (timestamps) {
    out.createdAt ??= now;
    out.updatedAt ??= now;
  }
  if (versionKey) out[versionKey] ??= 0;
  return out as T;
}
