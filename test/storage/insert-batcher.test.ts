import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchedInsert } from '../../src/storage/insert-batcher.js';
import { startTestApp, type TestApp } from '../support/app.js';

// The group commit shares one insert command among concurrent callers: a document the database (or the driver)
// refuses must fail its own caller only, never the others of its round.
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
