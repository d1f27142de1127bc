import { z } from 'zod';
import {
  identifier,
  isoDate,
  isoDatetime,
  LONG_TEXT,
  money,
  PATH_TEXT,
  text,
  TRANSACTION_TYPES,
} from '../../schemas/primitives.js';

/**
 * The parts of the account payload and of the post-import bodies that decide what an account holds, read with
 * the service's own field schemas (`schemas/primitives.ts`): identifiers trimmed (and in NFC where the service
 * keys by them), amounts normalised exactly as stored, so the expected side hashes and sums the same text and
 * cents the service does. Objects are not strict: every other field is ignored, never parsed.
 */

/** What one transaction contributes: its id, date (for re-dating), signed amount's parts. */
export const transactionFacts = z.object({
  transaction_id: text(128),
  transaction_date: isoDate,
  amount: money({ nonNegative: true }),
  type: z.enum(TRANSACTION_TYPES),
});
export type TransactionFacts = z.output<typeof transactionFacts>;

const transactions = z.array(transactionFacts);

export const accountFacts = z.object({
  import_supplier: identifier(32),
  external_account_number: identifier(128),
  ledgers: z
    .array(
      z.object({
        ledger_code: text(64),
        ledger_balance: money(),
        last_statement_closing_date: isoDate,
        historical_statement_transactions: transactions.optional(),
        current_statement_transactions: transactions.optional(),
      }),
    )
    .optional(),
  statements: z.array(z.object({ statement_id: text(128) })).optional(),
  notes: z.array(z.object({ body: text(LONG_TEXT), created_at: isoDatetime })).optional(),
});
export type AccountFacts = z.output<typeof accountFacts>;

const accountKey = { import_supplier: identifier(32), external_account_number: identifier(128) };

export const transactionsImportFacts = z.object({
  ...accountKey,
  ledger_code: text(64).optional(),
  dry_run: z.boolean().optional(),
  transactions,
});
export type TransactionsImportFacts = z.output<typeof transactionsImportFacts>;

export const billingDocumentsImportFacts = z.object({
  ...accountKey,
  ledger_code: text(64),
  historical_billing_documents: z.array(z.object({ billing_document_identifier: text(128), transactions })),
  additional_historical_transactions: transactions.optional(),
});
export type BillingDocumentsImportFacts = z.output<typeof billingDocumentsImportFacts>;

export const statementsImportFacts = z.object({
  ...accountKey,
  statements: z.array(z.object({ statement_id: text(128) })),
});
export type StatementsImportFacts = z.output<typeof statementsImportFacts>;

export const notesImportFacts = z.object({
  ...accountKey,
  notes: z.array(
    z.object({
      body: text(LONG_TEXT).optional(),
      document_paths: z.array(z.object({ document_path: text(PATH_TEXT) })).optional(),
      created_at: isoDatetime.optional(),
    }),
  ),
});
export type NotesImportFacts = z.output<typeof notesImportFacts>;
