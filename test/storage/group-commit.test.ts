import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchedDelete, batchedSet } from '../../src/storage/write-path/group-commit.js';
import { batchedInsert } from '../../src/storage/write-path/insert-batcher.js';
import { startTestApp, type TestApp } from '../support/app.js';

// The group commit shares one command among concurrent callers (inserts, sets and deletes by `_id`): a document or
// update the database (or the driver) refuses must fail its own caller only, never the others of its round.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'batcher' } });
});
afterAll(async () => t?.close());

it('a refused document fails only its caller; the others of its round are written, once', async () => {
  const model = t.app.db.models.Note;
  // The first caller's documents go at once; the next two wait and share the next command.
  const first = batchedInsert(model, [{ _id: 'batch-1' }]);
  // A key with a NUL byte: refused as a whole command (no per-document write errors).
  const refused = batchedInsert(model, [{ _id: 'batch-2', ['a\u0000b']: 1 }]);
  const neighbour = batchedInsert(model, [{ _id: 'batch-3' }, { _id: 'batch-4' }]);
  await expect(first).resolves.toEqual(['inserted']);
  await expect(refused).rejects.toThrow(/null bytes/);
  await expect(neighbour).resolves.toEqual(['inserted', 'inserted']);
  const ids = (
    await model.collection
      .find({ _id: { $in: ['batch-1', 'batch-2', 'batch-3', 'batch-4'] } } as never)
      .toArray()
  ).map((d) => d._id);
  expect(ids.sort()).toEqual(['batch-1', 'batch-3', 'batch-4']);
  // Sent again alone, the neighbour's documents are there already: duplicates, not a second copy.
  await expect(batchedInsert(model, [{ _id: 'batch-3' }])).resolves.toEqual(['duplicate']);
});

it('concurrent sets share one update command; a refused one fails only its caller', async () => {
  const model = t.app.db.models.Note;
  await batchedInsert(model, [{ _id: 'set-1' }, { _id: 'set-2' }, { _id: 'set-3' }]);
  const commands = await callsDuring(model, 'bulkWrite', async () => {
    // The first goes at once; the next three wait for it and share the next command.
    const first = batchedSet(model, 'set-1', { mark: 'a' });
    const second = batchedSet(model, 'set-2', { mark: 'b' });
    const refused = batchedSet(model, 'set-3', { ['a\u0000b']: 1 });
    const third = batchedSet(model, 'set-3', { mark: 'c' });
    await expect(first).resolves.toBeUndefined();
    await expect(second).resolves.toBeUndefined();
    await expect(refused).rejects.toThrow(/null bytes/);
    await expect(third).resolves.toBeUndefined();
  });
  // Two rounds; the second, refused as a whole (the driver will not send a key with a NUL byte), is sent again
  // one caller at a time: three more.
  expect(commands).toBe(5);
  const docs = await model.collection.find({ _id: { $in: ['set-1', 'set-2', 'set-3'] } } as never).toArray();
  expect(Object.fromEntries(docs.map((d) => [d._id, d.mark]))).toEqual({
    'set-1': 'a',
    'set-2': 'b',
    'set-3': 'c',
  });
  expect(docs.some((d) => 'a\u0000b' in d)).toBe(false);
});

it('concurrent deletes by _id share one delete command; each document goes, and a missing one is no error', async () => {
  const model = t.app.db.models.Note;
  await batchedInsert(model, [{ _id: 'del-1' }, { _id: 'del-2' }, { _id: 'del-3' }]);
  const commands = await callsDuring(model, 'deleteMany', async () => {
    // The first goes at once; the next three share the next command.
    await Promise.all([
      batchedDelete(model, 'del-1'),
      batchedDelete(model, 'del-2'),
      batchedDelete(model, 'del-3'),
      batchedDelete(model, 'del-never-there'),
    ]);
  });
  expect(commands).toBe(2);
  const left = await model.collection.countDocuments({ _id: { $in: ['del-1', 'del-2', 'del-3'] } } as never);
  expect(left).toBe(0);
});

// A round of sets is one update command of as many statements as callers. Stock FerretDB v1 kept each statement's
// read open (a PostgreSQL connection of its pool) until the command ended, and took another for each write: a
// command of as many statements as the pool has connections (60 in the tests on PostgreSQL) waited for ever. The
// project's build closes each statement's read before its write (scripts/ferretdb-id-lookups.patch).
it('an update command of more statements than the database has connections completes, each statement applied', async () => {
  const model = t.app.db.models.Note;
  const ids = Array.from({ length: 120 }, (_, i) => `many-${i}`);
  await batchedInsert(
    model,
    ids.map((_id) => ({ _id })),
  );
  const result = await model.collection.bulkWrite(
    ids.map((_id, i) => ({ updateOne: { filter: { _id }, update: { $set: { mark: i } } } })) as never,
  );
  expect(result.matchedCount).toBe(120);
  expect(result.modifiedCount).toBe(120);
  const docs = await model.collection.find({ _id: { $in: ids } } as never).toArray();
  expect(docs.map((d) => [d._id, d.mark]).sort()).toEqual(ids.map((id, i) => [id, i]).sort());
});

// A delete's documents are found as a find with its filter finds them (on FerretDB, the same query); a find, an
// update or a delete of one document is by its `_id`.
it.each([
  ['several _ids', { _id: { $in: ['del-1', 'del-2'] } }],
  ['one _id', { _id: 'del-1' }],
])(
  "documents of %s are looked up by _id: no collection scan, on MongoDB and on the project's FerretDB",
  async (_, filter) => {
    const model = t.app.db.models.Note;
    const explained = (await model.db.db!.command({
      explain: { find: model.collection.collectionName, filter },
    })) as { filterPushdown?: boolean; queryPlanner?: { winningPlan?: unknown } };
    if ('filterPushdown' in explained) {
      // FerretDB: the filter went to SQL (scripts/ferretdb-id-lookups.patch), an index search (SQLite: "SEARCH …
      // USING INDEX"; PostgreSQL: an index scan, where stock FerretDB reads the table for any of these).
      expect(explained.filterPushdown).toBe(true);
      expect(JSON.stringify(explained.queryPlanner)).toMatch(/USING INDEX|Index Scan/);
    } else {
      expect(JSON.stringify(explained.queryPlanner?.winningPlan)).not.toContain('COLLSCAN');
    }
  },
);

/** The collection's calls of `method` while `run` runs: the collection is the real one and its calls go through, counted. */
async function callsDuring(
  model: { collection: unknown },
  method: 'bulkWrite' | 'deleteMany',
  run: () => Promise<void>,
): Promise<number> {
  const collection = model.collection as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = collection[method]!.bind(collection);
  let commands = 0;
  collection[method] = (...args: unknown[]) => {
    commands++;
    return original(...args);
  };
  try {
    await run();
  } finally {
    collection[method] = original;
  }
  return commands;
}
