import { createHash } from 'node:crypto';
import type { Types } from 'mongoose';
import { processKey } from './process-key.js';
import type { Models } from '../models/index.js';
import { stagedPayloadModel } from '../models/staged-payload.js';
import { packText, unpackText } from '../write-path/packed-text.js';
import { retryTransient } from '../write-path/transient.js';
import { isDuplicateKey } from '../../infra/mongo.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { batchedSet } from '../write-path/group-commit.js';

export type StagedPayloadInput = {
  organisationId: Types.ObjectId;
  importSupplier: string;
  externalAccountNumber: string;
  /** The payload as received (it passed validation), serialized. */
  payload: string;
  /** The fingerprint of the validation it passed (kept with it; none: a creation validates it again). */
  validatedWith?: string | null;
  now: Date;
  /** The process's CREATED event is written (see `AccountImportProcess.history`). */
  history?: boolean;
};

/** A staged payload's text, and the fingerprint of the validation it passed when staged (null: unknown). */
export type StagedText = { text: string; validatedWith: string | null };

/**
 * `replace`: the payload becomes the staged one now (v1 stage). `defer`: a payload that would replace another
 * is only kept under its hash until `promoteStagedPayload` (a v2 schedule: a refused schedule changes nothing,
 * and a task that starts meanwhile creates from the payload it was scheduled with).
 */
export type StageMode = 'replace' | 'defer';

/** The identity of a payload's exact text: what an account records of the payload it was created from. */
export function payloadHash(payload: string): string {
  return createHash('sha256').update(payload).digest('hex');
}

/**
 * The repository of import processes and their staged payloads. Every read and write is by `_id` (the
 * process's natural key, see `processKey`): FerretDB's SQLite backend answers any other filter by reading the
 * whole collection. First stages go through the group commit (`batchedInsert`); writes are retried on
 * SQLITE_BUSY (`retryTransient`).
 */

/**
 * The staged payload of a process (serialized JSON), or null when nothing is staged. With `hash`, that
 * version of it: the current one if it still is (one read, the usual case: a creation runs from the payload
 * staged last), else the copy kept under its hash when it was replaced or staged deferred.
 */
export async function loadStagedPayload(
  models: Models,
  key: string,
  hash?: string,
): Promise<StagedText | null> {
  const payloads = stagedPayloadModel(models.AccountImportProcess.db);
  const read = async (id: string) => {
    const doc = await payloads.findById(id).select({ payload: 1, validatedWith: 1 }).lean();
    return doc ? { text: unpackText(doc.payload), validatedWith: doc.validatedWith ?? null } : null;
  };
  const current = await read(key);
  if (hash === undefined || (current !== null && payloadHash(current.text) === hash)) return current;
  // Replaced since, or a deferred version not promoted yet: kept under its hash (never removed).
  const archived = await read(archiveKey(key, hash));
  if (archived !== null) return archived;
  // Promoted between the two reads (a deferred version becomes the current one): read the current one again.
  const now = await read(key);
  return now !== null && payloadHash(now.text) === hash ? now : null;
}

/** Where a replaced payload is kept: `#` never occurs in a process key's supplier code. */
const archiveKey = (key: string, hash: string) => `${key}#${hash}`;

/** The process's state that staging and creation decide on (read by `_id`). */
export async function findProcess(models: Models, key: string) {
  return models.AccountImportProcess.findById(key).lean();
}

/** An import process as `findProcess` reads it. */
export type ProcessRow = NonNullable<Awaited<ReturnType<typeof findProcess>>>;

/**
 * Stores or replaces the staged payload (the caller has checked that the process may be staged; `existing`:
 * it has a process already). The payload goes first, so a process only ever counts as staged with its payload
 * stored. A first stage (no process yet, the common case in a migration) is two inserts, sent together with
 * other requests' inserts (`batchedInsert`); the `_id`s make concurrent first stages converge on one process
 * (the loser of the insert race gets a duplicate key and continues as an update).
 */
export async function storeStagedPayload(
  models: Models,
  input: StagedPayloadInput,
  existing: boolean,
  mode: StageMode = 'replace',
): Promise<{ status: 'created' | 'updated'; deferred: boolean; replaced?: boolean }> {
  const _id = processKey(input.importSupplier, input.externalAccountNumber);
  const payloads = stagedPayloadModel(models.AccountImportProcess.db);
  const packed = packText(input.payload);
  const validatedWith = input.validatedWith ?? null;
  const payloadDoc = { _id, payload: packed, stagedAt: input.now, validatedWith };
  const replacePayload = () =>
    upsertById(() =>
      payloads.updateOne(
        { _id },
        { $set: { payload: packed, stagedAt: input.now, validatedWith } },
        { upsert: true },
      ),
    );
  const markStaged = () =>
    retryTransient(() => models.AccountImportProcess.updateOne({ _id }, { $set: { stagedAt: input.now } }));

  // Deferred: the payload is kept under its hash only, and becomes the staged one when `promoteStagedPayload`
  // is called (a schedule, once its task is recorded).
  const keepVersion = () =>
    retryTransient(() =>
      batchedInsert(payloads, [
        completeDocument(
          payloads,
          {
            _id: archiveKey(_id, payloadHash(input.payload)),
            payload: packed,
            stagedAt: input.now,
            validatedWith,
          },
          input.now,
        ),
      ]),
    );
  if (existing) {
    if (mode === 'defer') {
      await keepVersion();
      return { status: 'updated', deferred: true };
    }
    const replaced = await archiveCurrent(payloads, _id, input.payload, input.now);
    await replacePayload();
    await markStaged();
    return { status: 'updated', deferred: false, replaced };
  }
  const [payloadOutcome] = await retryTransient(() =>
    batchedInsert(payloads, [completeDocument(payloads, payloadDoc, input.now)]),
  );
  let deferred = false;
  if (payloadOutcome === 'duplicate') {
    if (mode === 'defer') {
      await keepVersion();
      deferred = true;
    } else {
      await archiveCurrent(payloads, _id, input.payload, input.now);
      await replacePayload();
    }
  }
  // Processes come into being only by staging (or skipped by an operator), so "inserted" means "first stage".
  const processDoc = completeDocument(
    models.AccountImportProcess,
    {
      _id,
      organisationId: input.organisationId,
      importSupplier: input.importSupplier,
      externalAccountNumber: input.externalAccountNumber,
      stagedAt: input.now,
      history: input.history === true,
    },
    input.now,
  );
  const [processOutcome] = await retryTransient(() =>
    batchedInsert(models.AccountImportProcess, [processDoc]),
  );
  if (processOutcome === 'inserted') return { status: 'created', deferred };
  if (!deferred) await markStaged();
  return { status: 'updated', deferred };
}

/**
 * Makes a payload stored with `mode: 'defer'` the staged one (the current one is archived under its hash
 * first, as any replacement does). Idempotent: promoting the payload staged now writes the same again.
 */
export async function promoteStagedPayload(
  models: Models,
  key: string,
  payload: string,
  now: Date,
  validatedWith: string | null = null,
) {
  const payloads = stagedPayloadModel(models.AccountImportProcess.db);
  const packed = packText(payload);
  await archiveCurrent(payloads, key, payload, now);
  await upsertById(() =>
    payloads.updateOne(
      { _id: key },
      { $set: { payload: packed, stagedAt: now, validatedWith } },
      { upsert: true },
    ),
  );
  await retryTransient(() =>
    models.AccountImportProcess.updateOne({ _id: key }, { $set: { stagedAt: now } }),
  );
}

/**
 * Before a staged payload is replaced, a copy is kept under its hash: a creation that started from it (and
 * was interrupted) must finish from the same payload. Re-staging is rare, so this read and insert are too.
 * Returns whether other data was staged (so the stage replaces it: a re-stage in the account's timeline).
 */
async function archiveCurrent(
  payloads: ReturnType<typeof stagedPayloadModel>,
  key: string,
  next: string,
  now: Date,
): Promise<boolean> {
  const current = await payloads.findById(key).select({ payload: 1, stagedAt: 1, validatedWith: 1 }).lean();
  const text = current ? unpackText(current.payload) : null;
  if (!current || text === null || text === next) return false;
  const doc = {
    _id: archiveKey(key, payloadHash(text)),
    payload: packText(text),
    stagedAt: current.stagedAt,
    validatedWith: current.validatedWith ?? null,
  };
  await retryTransient(() => batchedInsert(payloads, [completeDocument(payloads, doc, now)]));
  return true;
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

/** Which processes a supplier's list shows (skipped ones never): every staged or imported one, or either kind. */
export type ProcessListKind = 'all' | 'pending' | 'imported';

/**
 * A supplier's processes of one kind, sorted by external account number, read as a cursor (memory stays flat
 * however long the cohort is); keyset pagination: `limit` processes after `after`.
 */
export function listProcesses(
  models: Models,
  importSupplier: string,
  kind: ProcessListKind,
  page: { limit?: number | undefined; after?: string | undefined },
) {
  const filter: Record<string, unknown> = { importSupplier, skipped: { $ne: true } };
  if (kind === 'pending') Object.assign(filter, { krakenAccountNumber: null, stagedAt: { $ne: null } });
  else if (kind === 'imported') filter.krakenAccountNumber = { $ne: null };
  else filter.$or = [{ krakenAccountNumber: { $ne: null } }, { stagedAt: { $ne: null } }];
  if (page.after !== undefined) filter.externalAccountNumber = { $gt: page.after };
  const query = models.AccountImportProcess.find(filter)
    .select({ externalAccountNumber: 1, krakenAccountNumber: 1, accountCreatedAt: 1, _id: 0 })
    .sort({ externalAccountNumber: 1 });
  if (page.limit !== undefined) query.limit(page.limit);
  return query.lean().cursor({ batchSize: Math.min(page.limit ?? 1000, 1000) });
}

/**
 * Marks the process imported (the last step of a creation): unconditional, every retry writes the same. Sent
 * with other creations' marks in one command (`batchedSet`).
 */
export async function markImported(
  models: Models,
  key: string,
  mark: { krakenAccountNumber: string; accountCreatedAt: Date; creationJobId: string },
  now: Date,
): Promise<void> {
  await retryTransient(() => batchedSet(models.AccountImportProcess, key, { ...mark, updatedAt: now }));
}

/** The create job a request stopped waiting for, so the status endpoint finds it once its slot lapses. */
export async function recordCreationJob(models: Models, key: string, creationJobId: string): Promise<void> {
  await retryTransient(() =>
    models.AccountImportProcess.updateOne({ _id: key }, { $set: { creationJobId } }),
  );
}

/** The last refusal of a create for invalid staged data: codes and paths only. */
export async function recordCreationRefusal(
  models: Models,
  key: string,
  refusal: { code: string; errors: { code: string; attr: string }[] },
): Promise<void> {
  await retryTransient(() =>
    models.AccountImportProcess.updateOne(
      { _id: key },
      { $set: { creationRefusal: JSON.stringify(refusal) } },
    ),
  );
}
