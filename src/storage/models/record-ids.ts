import { createHash } from 'node:crypto';
import { Types } from 'mongoose';

/**
 * A stable ObjectId for a record: sha256 of its owner (an account id, or an import process key) and natural
 * key, first 12 bytes. Process keys contain '/', so they never collide with an ObjectId's hex form.
 */
export function derivedId(owner: Types.ObjectId | string, ...key: string[]): Types.ObjectId {
  const hash = createHash('sha256')
    .update([typeof owner === 'string' ? owner : owner.toHexString(), ...key].join('\u0000'))
    .digest();
  return new Types.ObjectId(hash.subarray(0, 12));
}

/**
 * The `_id`s of an account's records, derived from their natural keys so that a retried write converges and
 * records are found by `_id` alone, the only lookup FerretDB's SQLite backend answers without reading the
 * whole collection. (Ledgers, transactions, statements and billing documents live in the ledger journal.)
 */
export const noteIdFor = (accountId: Types.ObjectId, dedupKey: string) =>
  derivedId(accountId, 'note', dedupKey);
