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
 * The `_id`s of an account's records, derived from their natural keys exactly so records written by the creation and by later imports are found the same way: by `_id`
 * alone, the only lookup FerretDB's SQLite backend answers without reading the whole collection.
 */
export const ledgerIdFor = (accountId: Types.ObjectId, ledgerCode: string) =>
  derivedId(accountId, 'ledger', ledgerCode);
export const transactionIdFor = (accountId: Types.ObjectId, transactionId: string) =>
  derivedId(accountId, 'transaction', transactionId);
export const noteIdFor = (accountId: Types.ObjectId, dedupKey: string) =>
  derivedId(accountId, 'note', dedupKey);
export const statementIdFor = (accountId: Types.ObjectId, statementId: string) =>
  derivedId(accountId, 'statement', statementId);
export const billingDocumentIdFor = (ledgerId: Types.ObjectId, identifier: string) =>
  derivedId(ledgerId, 'billing-document', identifier);
