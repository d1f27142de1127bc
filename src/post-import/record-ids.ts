import type { Types } from 'mongoose';
import { derivedId } from '../creation/records.js';

/**
 * The `_id`s of an account's records, derived from their natural keys exactly as the creation derives them
 * (`derivedId`), so records written by the creation and by later imports are found the same way: by `_id`
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
