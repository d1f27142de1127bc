import { Schema, type InferSchemaType } from 'mongoose';

/**
 * `notes`: keys of notes written onto the account (their count); `payment_instruction`: the account's active
 * instruction; `figures`: the reconciliation figures of an account written before they were kept, folded once
 * from its history (see `storage/ledger-journal.ts`).
 */
export const journalEntryKinds = [
  'opened',
  'transactions',
  'statements',
  'billing',
  'notes',
  'payment_instruction',
  'figures',
] as const;

/**
 * One entry of an account's ledger journal: the append-only history of its ledgers (balances, open statement
 * periods, the historical billing document import), transactions, statements and billing documents. Entry
 * `seq` of an account has `_id` `<account id>:<seq>`; entry 0 is written by the account's creation, and
 * every later change is the insert of the next number. The unique `_id` is the guarantee: of two writers
 * that read the same head, exactly one inserts the next entry; the other re-reads and decides again, so no
 * balance change or duplicate check is ever made against a stale head (see `src/storage/ledger-journal.ts`).
 *
 * What is never queried is stored opaque, as JSON text: on FerretDB's SQLite backend a write costs per BSON
 * value converted, so 200 transactions as one string cost a quarter of 200 documents (or sub-documents).
 * - `ledgers`: every ledger's state after this entry (so the newest entry alone is the current state), with its
 *   reconciliation figures (transaction count by origin, digest, billing documents; `storage/journal-figures.ts`);
 * - `summary`: the account's figures after this entry (statements, notes, active payment instruction); absent
 *   on entries written before the figures were kept;
 * - `keys`: the natural keys this entry adds (`t:` transaction ids, `s:` statement ids, `n:` note dedup keys),
 *   for duplicate checks and counts;
 * - `records`: the transactions, statements and billing documents it adds, as stored (deflated JSON text);
 * - `request`: on an entry a post-import request wrote, that request's identity and how many items it added,
 *   from which its `post_import.completed-v1` event is recorded (`storage/journal-state.ts`, `RequestMark`).
 * `writer` identifies the attempt that inserted it, so a writer whose insert's answer was lost knows it won.
 */
export const journalEntrySchema = new Schema(
  {
    _id: { type: String, required: true },
    accountId: { type: Schema.Types.ObjectId, required: true },
    seq: { type: Number, required: true },
    kind: { type: String, enum: journalEntryKinds, required: true },
    writer: { type: String, required: true },
    ledgers: { type: String, required: true },
    keys: { type: String, required: true },
    /** JSON text of `AccountSummary`; absent on entries written before reconciliation figures were kept. */
    summary: { type: String },
    /** JSON text, deflated (see `storage/packed-text.ts`). */
    records: { type: Schema.Types.Mixed, required: true },
    /** JSON text of `RequestMark`: the post-import request the entry wrote, and what it added (its event). */
    request: { type: String },
    /** Entries never change: a creation time, no update time or version. */
    createdAt: { type: Date, required: true },
  },
  { collection: 'ledger_journal', versionKey: false },
);
export type JournalEntryDoc = InferSchemaType<typeof journalEntrySchema>;

export function journalEntryId(accountIdHex: string, seq: number): string {
  return `${accountIdHex}:${seq}`;
}
