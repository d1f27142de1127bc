/**
 * Where a stored transaction came from. Shared by the journal (which counts them by origin), the API's schema,
 * and the client's expected side of reconciliation, so all three name the same origins.
 */
export const transactionOrigins = [
  'historical_statement',
  'current_statement',
  'imported',
  'billing_document',
  'additional_historical',
] as const;
export type TransactionOrigin = (typeof transactionOrigins)[number];

/** A ledger's transaction count by origin. */
export type OriginCounts = Record<TransactionOrigin, number>;

export function zeroOriginCounts(): OriginCounts {
  return Object.fromEntries(transactionOrigins.map((o) => [o, 0])) as OriginCounts;
}

/**
 * The origins that move the ledger balance: the payload's `ledger_balance` already holds its current statement
 * transactions, historical ones are inside the last statement balance, and billing documents are history too,
 * so after creation only imported transactions move it.
 */
export const BALANCE_ORIGINS: ReadonlySet<string> = new Set(['current_statement', 'imported']);
