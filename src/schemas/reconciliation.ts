import { z } from 'zod';
import { transactionOrigins } from '../vocabulary/transaction-origins.js';
import { externalAccountNumber, identifier } from './primitives.js';

/** The most accounts one reconciliation request reads (400 `too_many_items` beyond). */
export const RECONCILIATION_MAX_ACCOUNTS = 500;

/** `POST /v2/data-import/accounts/reconciliation/`. */
export const reconciliationRequestSchema = z.strictObject({
  import_supplier_code: identifier(64),
  external_account_numbers: z.array(externalAccountNumber()).min(1).max(RECONCILIATION_MAX_ACCOUNTS),
});
export type ReconciliationRequest = z.output<typeof reconciliationRequestSchema>;

const money = z
  .string()
  .regex(/^-?\d+\.\d{2}$/)
  .describe('A decimal string with two decimals, e.g. "-120.50".');

export const reconciledLedgerSchema = z.object({
  ledger_code: z.string(),
  balance: money.describe(
    'The balance the service holds: the payload’s ledger_balance moved by every transaction imported since.',
  ),
  last_statement_balance: money.describe('The payload’s last_statement_balance.'),
  last_statement_closing_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .nullable()
    .describe('YYYY-MM-DD, the payload’s.'),
  transactions: z.object({
    count: z.number().int().describe('Every transaction stored on the ledger, whatever its origin.'),
    digest: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe(
        'Sum modulo 2^256 of SHA-256(`<ledger_code>\\t<transaction_id>\\t<signed cents>`) over the ledger’s ' +
          'transactions, as 64 lowercase hex digits (64 zeros without transactions).',
      ),
    by_origin: z
      .object(Object.fromEntries(transactionOrigins.map((o) => [o, z.number().int()])))
      .describe('`count` by where the transactions came from.'),
  }),
  billing_documents: z.number().int().describe('Historical billing documents stored on the ledger.'),
});

/** What the platform holds for one created account, in a form the legacy side can compute too. */
export const accountReconciliationSchema = z.object({
  import_supplier_code: z.string(),
  external_account_number: z.string(),
  kraken_account_number: z.string(),
  as_of: z.string().describe('YYYY-MM-DDTHH:MM:SSZ: when it was read.'),
  ledgers: z.array(reconciledLedgerSchema).describe('In the order of the account payload.'),
  statements: z.number().int().describe('Statements stored on the account (payload and imported).'),
  notes: z.number().int().describe('Notes stored on the account (payload, imported, re-dating notes).'),
  payment_instruction: z
    .object({ vendor: z.string(), status: z.string() })
    .nullable()
    .describe('The active payment instruction, or null.'),
});
export type AccountReconciliation = z.output<typeof accountReconciliationSchema>;

export const reconciliationErrorCodes = ['account_not_found', 'not_found'] as const;
export type ReconciliationErrorCode = (typeof reconciliationErrorCodes)[number];

/** An account of a batch that cannot be read back. */
export const reconciliationMissSchema = z.object({
  external_account_number: z.string(),
  error: z.object({
    code: z
      .enum(reconciliationErrorCodes)
      .describe('account_not_found: staged but not created; not_found: no import process.'),
  }),
});
export type ReconciliationMiss = z.output<typeof reconciliationMissSchema>;

export const reconciliationResultsSchema = z.object({
  results: z
    .array(z.union([accountReconciliationSchema, reconciliationMissSchema]))
    .describe('One per requested account, in the order requested.'),
});
