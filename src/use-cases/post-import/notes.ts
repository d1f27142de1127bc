import type { Types } from 'mongoose';
import { noteDedupKey, redatingNoteKey } from '../../domain/reconciliation/note-keys.js';
import type { ImportNote, NoteResult, NotesImport } from '../../schemas/post-import.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import { type LedgerJournal } from '../../storage/journal/ledger-journal.js';
import { noteKey } from '../../storage/journal/journal-figures.js';
import { type StoredTransaction } from '../../storage/journal/journal-records.js';
import type { Storage } from '../../storage/index.js';
import type { NewNote } from '../../storage/records/notes.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport, requestKey, writeRef, type Written } from './events.js';
import { documentResolver, type PostImportTarget } from './target.js';

export const NOTE_CREATION_SUCCESS = 'NOTE_CREATION_SUCCESS';
export const NOTE_ALREADY_EXISTS = 'NOTE_ALREADY_EXISTS';

/** What the notes steps use of the storage object. */
export type NoteStorage = Pick<Storage, 'notes' | 'journal'>;

/**
 * The notes step: the notes imported onto the target account, then their event, which counts the notes the
 * request's journal entry added to the account's count (see `importNotes`): none already counted before it.
 */
export async function runNotesImport(
  ctx: PostImportContext,
  target: PostImportTarget<NotesImport>,
): Promise<NoteResult[]> {
  const { supplier, account, data } = target;
  const resolvePath = documentResolver(ctx, supplier);
  const { results, written } = await importNotes(
    ctx.storage,
    ctx.locks,
    account._id,
    data.notes,
    resolvePath,
    ctx.clock(),
  );
  if (written) await publishPostImport(ctx, target, { resource: 'notes', ...written });
  return results;
}

/**
 * Imports notes. A note is new unless the account has one with the same content and, when `created_at` is
 * given, the same `created_at`. The `_id` derived from (account, dedupKey) settles concurrent identical
 * requests; an undated note additionally matches an existing note of any date (looked up by content hash
 * first: the one query here that is not by `_id`, so it is only made for undated notes).
 *
 * The account's note count (reconciliation) is kept in its ledger journal, as the keys of its notes: once the
 * notes are written, one journal entry carries the key of every note the request names (written by it or found
 * there) that the journal does not hold yet, and the count grows by those. So the count rests on unique keys
 * only: the journal's unique entry numbers make one entry of two concurrent requests win and the other decide
 * again against it (a key is counted once, whoever wrote the note), and a request sent again adds nothing. A
 * process that dies between the notes and their entry leaves notes not yet counted and no answer; the client
 * sends the request again (every write of the API is idempotent), and its entry counts them then. Notes come
 * first so that the count never names a note that is not there.
 *
 * The entry is marked with the request's identity (its notes' dedup keys) and how many notes it counted:
 * `written`, what the request's event reports. Sent again, the request finds its mark and answers that count
 * (null: nothing of the request was new to the count).
 */
export async function importNotes(
  storage: NoteStorage,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  notes: readonly ImportNote[],
  resolvePath: (path: string) => string,
  now: Date,
): Promise<{ results: NoteResult[]; written: Written | null }> {
  const prepared = notes.map((n) => prepareNote(n, resolvePath, now));
  const undatedHashes = prepared.filter((p) => !p.note.created_at).map((p) => p.contentHash);
  const existingByContent = await storage.notes.earliestByContent(accountId, undatedHashes);

  const toInsert = prepared
    .map((p, index) => ({ p, index }))
    .filter(({ p }) => p.note.created_at || !existingByContent.has(p.contentHash));
  const inserted = await storage.notes.insert(
    toInsert.map(({ p }) => newNote(accountId, p)),
    now,
  );
  const insertedIndexes = new Set(toInsert.filter((_, i) => inserted.has(i)).map(({ index }) => index));

  // Every note the request names is on the account now: written above, or the one its content matched.
  const keys = new Set([
    ...toInsert.map(({ p }) => noteKey(p.dedupKey)),
    ...[...existingByContent.values()].map((n) => noteKey(n.dedupKey)),
  ]);
  const ref = writeRef([...new Set(prepared.map((p) => p.dedupKey))].sort());
  const written = await countNotes(storage.journal, locks, accountId, ref, [...keys], now);

  // Undated notes that lost a race report the creation time of the note that won.
  const lostUndated = prepared.filter(
    (p, i) => !insertedIndexes.has(i) && !p.note.created_at && !existingByContent.has(p.contentHash),
  );
  await learnWinners(storage.notes, accountId, lostUndated, existingByContent);

  const results = prepared.map((p, i) => noteResult(p, insertedIndexes.has(i), existingByContent));
  return { results, written };
}

/** A note of the request with its documents' locations, its keys and its creation time. */
type PreparedNote = {
  note: ImportNote;
  documentPaths: string[];
  contentHash: string;
  dedupKey: string;
  createdAt: Date;
};

/** The earliest note of the account with a content hash: its creation time and dedup key. */
type ByContent = Map<string, { createdAt: Date; dedupKey: string }>;

function prepareNote(note: ImportNote, resolvePath: (path: string) => string, now: Date): PreparedNote {
  const documentPaths = (note.document_paths ?? []).map((p) => resolvePath(p.document_path));
  const key = noteDedupKey(note.body ?? null, documentPaths, note.created_at ?? null);
  return { note, documentPaths, ...key, createdAt: note.created_at ? new Date(note.created_at) : now };
}

function newNote(accountId: Types.ObjectId, p: PreparedNote): NewNote {
  return {
    accountId,
    dedupKey: p.dedupKey,
    contentHash: p.contentHash,
    body: p.note.body ?? null,
    documentPaths: p.documentPaths,
    noteCreatedAt: p.createdAt,
    isPinned: p.note.is_pinned ?? false,
    unpinAt: p.note.unpin_at ? new Date(p.note.unpin_at) : null,
    origin: 'note_import',
  };
}

/** Adds to `byContent` the notes that won the race of these undated ones (read by `_id`). */
async function learnWinners(
  notes: NoteStorage['notes'],
  accountId: Types.ObjectId,
  lost: readonly PreparedNote[],
  byContent: ByContent,
): Promise<void> {
  if (lost.length === 0) return;
  const winners = await notes.find(
    accountId,
    lost.map((p) => p.dedupKey),
  );
  for (const [i, w] of winners.entries())
    if (w?.contentHash)
      byContent.set(w.contentHash, { createdAt: w.noteCreatedAt, dedupKey: lost[i]!.dedupKey });
}

/** One note's answer: created now, or already there (undated: as of the earliest note of its content). */
function noteResult(p: PreparedNote, created: boolean, byContent: ByContent): NoteResult {
  const at =
    created || p.note.created_at ? p.createdAt : (byContent.get(p.contentHash)?.createdAt ?? p.createdAt);
  const { body, document_paths, is_pinned, unpin_at } = p.note;
  return {
    created_at: formatUtcDatetime(at),
    body: body ?? '',
    status: created ? NOTE_CREATION_SUCCESS : NOTE_ALREADY_EXISTS,
    ...(document_paths !== undefined && { document_paths }),
    ...(is_pinned !== undefined && { is_pinned }),
    ...(unpin_at !== undefined && { unpin_at }),
  };
}

/**
 * Appends the keys of notes on the account that its journal does not hold yet, marked with the request
 * (see `importNotes`); returns what the request's entry counted, now or on an earlier attempt.
 */
async function countNotes(
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  ref: string,
  keys: readonly string[],
  now: Date,
): Promise<Written | null> {
  if (keys.length === 0) return null;
  const key = requestKey('notes', ref);
  return locks.with(accountId, () =>
    journal.append<Written | null>(
      accountId,
      (head) => {
        const before = head.requests.get(key);
        if (before) return { write: null, result: { ref, count: before.count } };
        const added = keys.filter((k) => !head.keys.has(k));
        if (added.length === 0) return { write: null, result: null };
        return {
          write: {
            kind: 'notes',
            ledgers: head.ledgers,
            keys: added,
            records: {},
            request: { key, count: added.length },
          },
          result: { ref, count: added.length },
        };
      },
      now,
    ),
  );
}

/** The pinned note explaining the transactions one journal entry re-dated into the open statement period. */
export type RedatingNote = {
  ledgerCode: string;
  openPeriodStart: string;
  transactionIds: string[];
  digest: string;
  dedupKey: string;
};

/**
 * The re-dating note that re-dated transactions (all of one entry, so of one ledger and re-dated to the same
 * day) call for, or null when there are none. Keyed by ledger and ids (`redatingNoteKey`, which the client's
 * expected side computes too), so every writer of it converges on one note.
 */
export function redatingNoteOf(redated: readonly StoredTransaction[]): RedatingNote | null {
  const first = redated[0];
  if (!first) return null;
  const transactionIds = redated.map((t) => t.transactionId);
  const key = redatingNoteKey(first.ledgerCode, transactionIds);
  return { ledgerCode: first.ledgerCode, openPeriodStart: first.transactionDate, transactionIds, ...key };
}

/** Writes a re-dating note (a no-op when it is there: its `_id` is derived from its key). */
export async function writeRedatingNote(
  notes: NoteStorage['notes'],
  accountId: Types.ObjectId,
  note: RedatingNote,
  createdAt: Date,
): Promise<void> {
  const ids = note.transactionIds;
  const shown =
    ids.length > 20 ? `${ids.slice(0, 20).join(', ')} and ${ids.length - 20} more` : ids.join(', ');
  const body =
    `${ids.length} imported transaction(s) on ledger ${note.ledgerCode} were dated before its open statement period and ` +
    `were re-dated to ${note.openPeriodStart}: ${shown}. Each transaction's note records its original date.`;
  await notes.insert(
    [
      {
        accountId,
        dedupKey: note.dedupKey,
        contentHash: `system:${note.digest}`,
        body,
        documentPaths: [],
        noteCreatedAt: createdAt,
        isPinned: true,
        unpinAt: null,
        origin: 'system' as const,
      },
    ],
    createdAt,
  );
}

/**
 * Makes sure of the re-dating note that journal entry `seq` counts (its `dedupKey`): when it is missing (the
 * entry's writer stopped before writing it), it is written from what the entry re-dated, as of the entry.
 */
export async function ensureRedatingNote(
  storage: NoteStorage,
  accountId: Types.ObjectId,
  from: { seq: number; dedupKey: string },
): Promise<void> {
  const [there] = await storage.notes.find(accountId, [from.dedupKey]);
  if (there) return;
  const entry = await storage.journal.entry(accountId, from.seq);
  const note = redatingNoteOf(
    (entry?.records.transactions ?? []).filter((t) => t.originalTransactionDate !== null),
  );
  if (entry && note?.dedupKey === from.dedupKey)
    await writeRedatingNote(storage.notes, accountId, note, entry.createdAt);
}
