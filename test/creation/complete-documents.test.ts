import mongoose, { Types, type Model } from 'mongoose';
import { afterAll, describe, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { modelsFor } from '../../src/storage/models/index.js';
import { noteIdFor } from '../../src/storage/models/record-ids.js';
import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { completeDocument } from '../../src/storage/write-path/insert-batcher.js';
import { accountFields, buildJournalOpening, buildNotes } from '../../src/use-cases/creation/records.js';
import { LedgerJournal } from '../../src/storage/journal/ledger-journal.js';
import { depsOf } from '../../src/storage/journal/journal-deps.js';
import { validateAccount } from '../../src/domain/validation/index.js';
import { testContext, validAccountPayload } from '../domain/fixtures.js';

/**
 * Creation and staging insert documents without mongoose (`batchedInsert`), so `completeDocument` must
 * produce what mongoose itself would store: every default, the timestamps, the version key, nothing else.
 * No database needed: a mongoose document is built and compared, never saved.
 */
const conn = mongoose.createConnection();
const models = modelsFor(conn);
afterAll(() => conn.close());

const now = new Date('2026-11-22T10:00:00.000Z');

function asMongooseWouldStore(model: Model<any>, doc: object): Record<string, unknown> {
  const stored = new model(doc).toObject({ depopulate: true }) as Record<string, unknown>;
  const options = model.schema.options as { timestamps?: boolean; versionKey?: string | false };
  if (options.timestamps) Object.assign(stored, { createdAt: now, updatedAt: now });
  if (options.versionKey !== false) stored[options.versionKey ?? '__v'] = 0;
  return stored;
}

describe('documents built for inserts that bypass mongoose', () => {
  const raw = validAccountPayload();
  const result = validateAccount(structuredClone(raw), testContext());
  if (!result.ok) throw new Error('fixture must validate');
  const data = result.data;
  const ctx = { accountId: new Types.ObjectId(), bucket: 'bucket', documentRoot: 'root' };

  const cases: Array<[string, Model<any>, object[]]> = [
    [
      'journal entry',
      models.JournalEntry,
      [
        new LedgerJournal(models.JournalEntry, depsOf(models)).entryDocument(
          ctx.accountId,
          0,
          'opened',
          buildJournalOpening(data, ctx),
          now,
        ),
      ],
    ],
    [
      'notes',
      models.Note,
      // With the `_id` the notes' insert derives.
      buildNotes(data, ctx).map((note) => ({ _id: noteIdFor(note.accountId, note.dedupKey), ...note })),
    ],
    [
      'account',
      models.Account,
      [
        {
          _id: ctx.accountId,
          number: 'A-0123ABCD',
          organisationId: new Types.ObjectId(),
          importSupplier: 'SUPPLIER',
          externalAccountNumber: 'EXT-1',
          processId: processKey('SUPPLIER', 'EXT-1'),
          operationsTeamId: new Types.ObjectId(),
          ...accountFields(data),
          sourceHash: 'f'.repeat(64),
          migrationEmailStatus: null,
        },
      ],
    ],
    [
      'import process',
      models.AccountImportProcess,
      [
        {
          _id: processKey('SUPPLIER', 'EXT-1'),
          organisationId: new Types.ObjectId(),
          importSupplier: 'SUPPLIER',
          externalAccountNumber: 'EXT-1',
          stagedAt: now,
        },
      ],
    ],
    [
      'staged payload',
      stagedPayloadModel(conn),
      [{ _id: processKey('SUPPLIER', 'EXT-1'), payload: '{}', stagedAt: now }],
    ],
  ];

  it.each(cases)('%s: equal to what mongoose would store', (_name, model, docs) => {
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) {
      expect(completeDocument(model, doc, now)).toEqual(asMongooseWouldStore(model, doc));
    }
  });

  it('gives every document its own copy of array defaults', () => {
    const [a, b] = [{}, {}].map((d) => completeDocument(models.Note, d, now)) as Array<{
      documentPaths: string[];
    }>;
    expect(a!.documentPaths).toEqual([]);
    expect(a!.documentPaths).not.toBe(b!.documentPaths);
  });
});
