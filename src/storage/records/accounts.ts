import { randomBytes } from 'node:crypto';
import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { noteIdFor } from '../models/record-ids.js';
import type { NewNote } from './notes.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * The repository of accounts. Reads are by `_id` (derived from
 * the import process key, see `accountIdFor`); inserts go through the group commit and are retried on
 * SQLITE_BUSY, and a duplicate key means "already there" (a retried creation converges).
 */

/** `A-` and 8 characters of 0-9A-F. */
export function newAccountNumber(): string {
  return `A-${randomBytes(4).toString('hex').toUpperCase()}`;
}

export type NewAccount = Record<string, unknown> & { _id: Types.ObjectId };

/** The fields of an account that creation reads back. */
export type AccountRow = {
  _id: Types.ObjectId;
  number: string;
  createdAt?: Date | null;
  sourcePayload?: string | null;
  sourceHash?: string | null;
  migrationEmailStatus?: string | null;
};

/** The account created for a process, if any (read by `_id`). */
export async function findAccount(models: Models, accountId: Types.ObjectId) {
  return models.Account.findById(accountId).lean<AccountRow>();
}

/** Inserts the account with a fresh random number, retrying on a number collision; converges if it exists. */
export async function insertAccount(models: Models, fields: NewAccount, now: Date): Promise<AccountRow> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const doc = completeDocument(models.Account, { ...fields, number: newAccountNumber() }, now);
    const [outcome] = await retryTransient(() => batchedInsert(models.Account, [doc]));
    if (outcome === 'inserted') return doc as unknown as AccountRow;
    // Either another attempt of this creation inserted the account first, or the number was taken.
    const winner = await models.Account.findById(fields._id).lean();
    if (winner) return winner;
  }
  throw new Error('could not allocate a unique account number');
}

/**
 * A dry run's check of the records a creation would insert beside the account: rejects with the model's
 * ValidationError, as their insert would. (The journal's entry is checked by building it.)
 */
export async function validateRecords(models: Models, records: { notes: readonly NewNote[] }): Promise<void> {
  await Promise.all(
    records.notes.map((note) =>
      new models.Note({ _id: noteIdFor(note.accountId, note.dedupKey), ...note }).validate(),
    ),
  );
}
