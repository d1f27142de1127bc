import type { Types } from 'mongoose';
import { processKey } from '../models/account-import-process.js';
import type { Models } from '../models/index.js';
import { stagedPayloadModel } from '../models/staged-payload.js';
import { retryTransient } from '../storage/transient.js';
import { isDuplicateKey } from '../infra/mongo.js';
import { batchedInsert, completeDocument } from '../storage/insert-batcher.js';

export type StageOutcome =
  | { status: 'created' | 'updated' }
  | { status: 'already_imported'; krakenAccountNumber: string }
  | { status: 'skipped' };

type StageInput = {
  organisationId: Types.ObjectId;
  importSupplier: string;
  externalAccountNumber: string;
  /** The payload as received (it passed validation), serialized. */
  payload: string;
  now: Date;
};

/** The staged payload of a process (serialized JSON), or null when nothing is staged. */
export async function loadStagedPayload(models: Models, key: string): Promise<string | null> {
  const doc = await stagedPayloadModel(models.AccountImportProcess.db)
    .findById(key)
    .select({ payload: 1 })
    .lean();
  return doc?.payload ?? null;
}

/**
 * Stores or replaces the staged payload. Every read and write is by `_id` (the natural key), the only kind
 * FerretDB's SQLite backend answers without reading the whole collection. The refusals are a read before
 * the writes: a stage racing the final step of a create may still store its payload after the account
 * exists, which changes nothing (the account keeps the payload it was made from; an imported process is
 * never created from again). The payload goes first, so a process only ever counts as staged with its payload
 * stored. A first stage (no process yet, the common case in a migration) is two inserts, sent together with
 * other requests' inserts (`batchedInsert`); the `_id`s make concurrent first stages converge on one process
 * (the loser of the insert race gets a duplicate key and continues as an update).
 */
export async function stageAccount(models: Models, input: StageInput): Promise<StageOutcome> {
  const _id = processKey(input.importSupplier, input.externalAccountNumber);
  const existing = await models.AccountImportProcess.findById(_id)
    .select({ krakenAccountNumber: 1, skipped: 1 })
    .lean();
  if (existing?.krakenAccountNumber)
    return { status: 'already_imported', krakenAccountNumber: existing.krakenAccountNumber };
  if (existing?.skipped) return { status: 'skipped' };

  const payloads = stagedPayloadModel(models.AccountImportProcess.db);
  const payloadDoc = { _id, payload: input.payload, stagedAt: input.now };
  const replacePayload = () =>
    upsertById(() =>
      payloads.updateOne(
        { _id },
        { $set: { payload: input.payload, stagedAt: input.now } },
        { upsert: true },
      ),
    );
  const markStaged = () =>
    retryTransient(() => models.AccountImportProcess.updateOne({ _id }, { $set: { stagedAt: input.now } }));

  if (existing) {
    await replacePayload();
    await markStaged();
    return { status: 'updated' };
  }
  const [payloadOutcome] = await retryTransient(() =>
    batchedInsert(payloads, [completeDocument(payloads, payloadDoc, input.now)]),
  );
  if (payloadOutcome === 'duplicate') await replacePayload();
  // Processes come into being only by staging (or skipped by an operator), so "inserted" means "first stage".
  const processDoc = completeDocument(
    models.AccountImportProcess,
    {
      _id,
      organisationId: input.organisationId,
      importSupplier: input.importSupplier,
      externalAccountNumber: input.externalAccountNumber,
      stagedAt: input.now,
    },
    input.now,
  );
  const [processOutcome] = await retryTransient(() =>
    batchedInsert(models.AccountImportProcess, [processDoc]),
  );
  if (processOutcome === 'inserted') return { status: 'created' };
  await markStaged();
  return { status: 'updated' };
}

/** Concurrent upserts of one `_id` can both try the insert: the loser gets a duplicate key and, retried, updates. */
async function upsertById<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await retryTransient(write);
    } catch (err) {
      if (!isDuplicateKey(err) || attempt >= 3) throw err;
    }
  }
}
