import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { noteIdFor } from '../models/record-ids.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * The repository of notes. A note's `_id` is derived from (account, dedup key), so identical notes converge on
 * one document and are found by `_id`.
 */

/** How many reads by `_id` one request keeps in flight (its notes are bounded too, see POST_IMPORT_LIMITS). */
const READ_CONCURRENCY = 8;

export type NoteDocument = {
  _id: Types.ObjectId;
  accountId: Types.ObjectId;
  dedupKey: string;
  contentHash: string | null;
  body: string | null;
  documentPaths: string[];
  noteCreatedAt: Date;
  isPinned: boolean;
  unpinAt: Date | null;
  origin: 'account_payload' | 'note_import' | 'system';
};

/** A note to write: its `_id` follows from its account and dedup key (`noteIdFor`). */
export type NewNote = Omit<NoteDocument, '_id'>;

/**
 * Inserts notes, skipping those that exist (a creation's notes, an import's, a re-dating note), through the
 * group commit; returns the indexes this call inserted.
 */
export async function insertNotes(
  models: Models,
  notes: readonly NewNote[],
  now: Date,
): Promise<Set<number>> {
  if (notes.length === 0) return new Set();
  const docs = notes.map((note) =>
    completeDocument(models.Note, { _id: noteIdFor(note.accountId, note.dedupKey), ...note }, now),
  );
  const outcomes = await retryTransient(() => batchedInsert(models.Note, docs));
  return new Set(outcomes.flatMap((outcome, i) => (outcome === 'inserted' ? [i] : [])));
}

/**
 * The earliest of the account's notes with each content hash (undated imports match a note of any date): its
 * creation time and dedup key. One of the two note queries that are not by `_id`: FerretDB v1 answers it by
 * reading the collection, so it is made only for undated notes; on MongoDB the (accountId, contentHash) index
 * serves it.
 */
export async function earliestByContent(
  models: Models,
  accountId: Types.ObjectId,
  contentHashes: readonly string[],
): Promise<Map<string, { createdAt: Date; dedupKey: string }>> {
  const found = new Map<string, { createdAt: Date; dedupKey: string }>();
  if (contentHashes.length === 0) return found;
  const notes = await models.Note.find(
    { accountId, contentHash: { $in: contentHashes } },
    { contentHash: 1, noteCreatedAt: 1, dedupKey: 1 },
  )
    .sort({ noteCreatedAt: 1 })
    .lean();
  for (const n of notes)
    if (n.contentHash && !found.has(n.contentHash))
      found.set(n.contentHash, { createdAt: n.noteCreatedAt, dedupKey: n.dedupKey });
  return found;
}

/**
 * The dedup keys of every note of the account. The other note query not by `_id` (a collection read on
 * FerretDB v1): made once per account written before note counts were kept (see `ledger-journal.ts`).
 */
export async function listNoteKeys(models: Models, accountId: Types.ObjectId): Promise<string[]> {
  const notes = await models.Note.find({ accountId }, { dedupKey: 1, _id: 0 }).lean();
  return notes.map((n) => n.dedupKey);
}

/** Notes by dedup key, read by `_id` with bounded concurrency (null where there is none). */
export async function findNotes(
  models: Models,
  accountId: Types.ObjectId,
  dedupKeys: readonly string[],
): Promise<Array<{ contentHash?: string | null; noteCreatedAt: Date } | null>> {
  const out: Array<{ contentHash?: string | null; noteCreatedAt: Date } | null> = new Array(
    dedupKeys.length,
  ).fill(null);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(READ_CONCURRENCY, dedupKeys.length) }, async () => {
      while (next < dedupKeys.length) {
        const i = next++;
        out[i] = await models.Note.findById(noteIdFor(accountId, dedupKeys[i]!), {
          contentHash: 1,
          noteCreatedAt: 1,
        }).lean();
      }
    }),
  );
  return out;
}
