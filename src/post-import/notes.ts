import type { Types } from 'mongoose';
import { noteDedupKey, redatingNoteKey } from '../domain/reconciliation/note-keys.js';
import type { Models } from '../models/index.js';
import type { ImportNote, NoteResult, NotesImport } from '../schemas/post-import.js';
import { formatUtcDatetime } from '../schemas/primitives.js';
import { noteIdFor } from '../models/record-ids.js';
import { noteKey, type LedgerJournal } from '../storage/ledger-journal.js';
import { earliestByContent, findNotes, insertNotes } from '../storage/notes.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport } from './events.js';
import { documentResolver, type PostImportTarget } from './target.js';

export const NOTE_CREATION_SUCCESS = 'NOTE_CREATION_SUCCESS';
export const NOTE_ALREADY_EXISTS = 'NOTE_ALREADY_EXISTS';

/**
 * The notes step: the notes imported onto the target account, then their event. Written by it or already
 * there, every note of the request is on the account, so the event counts them all (see `publishPostImport`).
 */
export async function runNotesImport(
  ctx: PostImportContext,
  target: PostImportTarget<NotesImport>,
): Promise<NoteResult[]> {
  const { supplier, account, data } = target;
  const resolvePath = documentResolver(ctx, supplier);
  const results = await importNotes(
    ctx.models,
    ctx.storage.journal,
    ctx.locks,
    account._id,
    data.notes,
    resolvePath,
    ctx.clock(),
  );
  await publishPostImport(ctx, target, { resource: 'notes', count: results.length, repeatable: true });
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
 */
export async function importNotes(
  models: Models,
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  notes: readonly ImportNote[],
  resolvePath: (path: string) => string,
  now: Date,
): Promise<NoteResult[]> {
  const prepared = notes.map((n) => {
    const documentPaths = (n.document_paths ?? []).map((p) => resolvePath(p.document_path));
    const key = noteDedupKey(n.body ?? null, documentPaths, n.created_at ?? null);
    return { note: n, documentPaths, ...key, createdAt: n.created_at ? new Date(n.created_at) : now };
  });

  const undatedHashes = prepared.filter((p) => !p.note.created_at).map((p) => p.contentHash);
  const existingByContent = await earliestByContent(models, accountId, undatedHashes);

  const toInsert = prepared
    .map((p, index) => ({ p, index }))
    .filter(({ p }) => p.note.created_at || !existingByContent.has(p.contentHash));
  const inserted = await insertNotes(
    models,
    toInsert.map(({ p }) => ({
      _id: noteIdFor(accountId, p.dedupKey),
      accountId,
      dedupKey: p.dedupKey,
      contentHash: p.contentHash,
      body: p.note.body ?? null,
      documentPaths: p.documentPaths,
      noteCreatedAt: p.createdAt,
      isPinned: p.note.is_pinned ?? false,
      unpinAt: p.note.unpin_at ? new Date(p.note.unpin_at) : null,
      origin: 'note_import' as const,
    })),
    now,
  );
  const insertedIndexes = new Set(toInsert.filter((_, i) => inserted.has(i)).map(({ index }) => index));

  // Every note the request names is on the account now: written above, or the one its content matched.
  const keys = new Set([
    ...toInsert.map(({ p }) => noteKey(p.dedupKey)),
    ...[...existingByContent.values()].map((n) => noteKey(n.dedupKey)),
  ]);
  await countNotes(journal, locks, accountId, [...keys], now);

  // Undated notes that lost a race report the creation time of the note that won.
  const lostUndated = prepared.filter(
    (p, i) => !insertedIndexes.has(i) && !p.note.created_at && !existingByContent.has(p.contentHash),
  );
  if (lostUndated.length > 0) {
    const winners = await findNotes(
      models,
      accountId,
      lostUndated.map((p) => p.dedupKey),
    );
    for (const [i, w] of winners.entries())
      if (w?.contentHash)
        existingByContent.set(w.contentHash, {
          createdAt: w.noteCreatedAt,
          dedupKey: lostUndated[i]!.dedupKey,
        });
  }

  return prepared.map((p, i) => {
    const created = insertedIndexes.has(i);
    const at =
      created || p.note.created_at
        ? p.createdAt
        : (existingByContent.get(p.contentHash)?.createdAt ?? p.createdAt);
    const { body, document_paths, is_pinned, unpin_at } = p.note;
    return {
      created_at: formatUtcDatetime(at),
      body: body ?? '',
      status: created ? NOTE_CREATION_SUCCESS : NOTE_ALREADY_EXISTS,
      ...(document_paths !== undefined && { document_paths }),
      ...(is_pinned !== undefined && { is_pinned }),
      ...(unpin_at !== undefined && { unpin_at }),
    };
  });
}

/** Appends the keys of notes on the account that its journal does not hold yet (see `importNotes`). */
async function countNotes(
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  keys: readonly string[],
  now: Date,
): Promise<void> {
  if (keys.length === 0) return;
  await locks.with(accountId, () =>
    journal.append(
      accountId,
      (head) => {
        const added = keys.filter((key) => !head.keys.has(key));
        if (added.length === 0) return { write: null, result: null };
        return { write: { kind: 'notes', ledgers: head.ledgers, keys: added, records: {} }, result: null };
      },
      now,
    ),
  );
}

/**
 * The one pinned note explaining re-dated transactions; keyed by ledger and ids so retries converge on it.
 * Returns its dedup key: the transactions' entry carries it, which counts the note (see `importNotes`).
 */
export async function addRedatingNote(
  models: Models,
  accountId: Types.ObjectId,
  ledger: { code: string; openPeriodStart: string | null },
  transactionIds: readonly string[],
  now: Date,
): Promise<string> {
  const shown =
    transactionIds.length > 20
      ? `${transactionIds.slice(0, 20).join(', ')} and ${transactionIds.length - 20} more`
      : transactionIds.join(', ');
  const body =
    `${transactionIds.length} imported transaction(s) on ledger ${ledger.code} were dated before its open statement period and ` +
    `were re-dated to ${ledger.openPeriodStart}: ${shown}. Each transaction's note records its original date.`;
  const { digest, dedupKey } = redatingNoteKey(ledger.code, transactionIds);
  await insertNotes(
    models,
    [
      {
        _id: noteIdFor(accountId, dedupKey),
        accountId,
        dedupKey,
        contentHash: `system:${digest}`,
        body,
        documentPaths: [],
        noteCreatedAt: now,
        isPinned: true,
        unpinAt: null,
        origin: 'system' as const,
      },
    ],
    now,
  );
  return dedupKey;
}
