import { createHash } from 'node:crypto';

/**
 * The identities notes are deduplicated by, shared by the writers of notes (creation, the note import, the
 * transaction import's re-dating note) and the client's expected side of reconciliation, which must count notes
 * exactly as the service does.
 */

/**
 * The dedup identity of a note: a hash of its content (body, document locations) plus its `created_at`
 * as given (YYYY-MM-DDTHH:MM:SSZ), or `*` when none was given. Hashing keeps index keys short for long bodies.
 */
export function noteDedupKey(
  body: string | null,
  documentLocations: readonly string[],
  createdAt: string | null,
): { contentHash: string; dedupKey: string } {
  const contentHash = createHash('sha256')
    .update(JSON.stringify([body, documentLocations]))
    .digest('hex');
  return { contentHash, dedupKey: `${contentHash}|${createdAt ?? '*'}` };
}

/**
 * The dedup key of the one pinned note a transaction import writes when it re-dates transactions into the open
 * statement period: keyed by the ledger and the re-dated ids, so a retried request finds the note it wrote.
 */
export function redatingNoteKey(
  ledgerCode: string,
  transactionIds: readonly string[],
): {
  digest: string;
  dedupKey: string;
} {
  const digest = createHash('sha256')
    .update(JSON.stringify([ledgerCode, [...transactionIds].sort()]))
    .digest('hex');
  return { digest, dedupKey: `system:redated-transactions:${digest}` };
}
