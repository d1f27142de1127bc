import { z } from 'zod';
import { noteContentRequired, noteFields } from './account.js';
import {
  BILLING_DOCUMENT_TYPES,
  cents,
  choice,
  externalAccountNumber,
  importSupplierCode,
  isoDate,
  isoDatetime,
  PATH_TEXT,
  text,
} from './primitives.js';
import { transactionSchema } from './transaction.js';

const accountKey = {
  import_supplier: importSupplierCode(),
  external_account_number: externalAccountNumber(),
};

/**
 * The most items each array of a post-import body may hold (400 `too_many_items` beyond): one request stays a
 * bounded amount of work and one journal entry of bounded size. Larger imports are split into requests.
 */
export const POST_IMPORT_LIMITS = {
  notes: 100,
  document_paths: 20,
  transactions: 1_000,
  historical_billing_documents: 500,
  billing_document_transactions: 100,
  additional_historical_transactions: 1_000,
  statements: 500,
} as const;

export const documentPathSchema = z.strictObject({ document_path: text(PATH_TEXT) });

/** A note of the note import: body or document paths, `created_at` defaults to now. */
export const importNoteSchema = z
  .strictObject({
    ...noteFields,
    document_paths: z.array(documentPathSchema).min(1).max(POST_IMPORT_LIMITS.document_paths).optional(),
    created_at: isoDatetime.optional(),
  })
  .refine((note) => note.body !== undefined || note.document_paths !== undefined, noteContentRequired);

export const NOTE_STATUSES = ['NOTE_CREATION_SUCCESS', 'NOTE_ALREADY_EXISTS'] as const;

/**
 * One item of the note import's answer: `body` is always there ("" for a note of documents only), and the
 * note's document paths, pin and unpin date are echoed when it gave them.
 */
export const noteResultSchema = z.object({
  created_at: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
  body: z.string(),
  status: z.enum(NOTE_STATUSES),
  document_paths: z.array(z.object({ document_path: z.string() })).optional(),
  is_pinned: z.boolean().optional(),
  unpin_at: z.string().optional(),
});

export const notesImportSchema = z.strictObject({
  ...accountKey,
  notes: z.array(importNoteSchema).min(1).max(POST_IMPORT_LIMITS.notes),
});

export const transactionsImportSchema = z.strictObject({
  ...accountKey,
  transactions: z.array(transactionSchema).min(1).max(POST_IMPORT_LIMITS.transactions),
  // Addition to the interface: target a ledger other than the account's first one.
  ledger_code: text(64).optional(),
  dry_run: z.boolean().optional(),
});

export const historicalBillingDocumentSchema = z.strictObject({
  billing_document_identifier: text(128),
  billing_document_type: z.enum(BILLING_DOCUMENT_TYPES),
  issued_date: isoDate,
  bill_period_from_date: isoDate.optional(),
  bill_period_to_date: isoDate.optional(),
  transactions: z.array(transactionSchema).min(1).max(POST_IMPORT_LIMITS.billing_document_transactions),
});

export const billingDocumentsImportSchema = z.strictObject({
  ...accountKey,
  ledger_code: text(64),
  ledger_number: text(64).optional(),
  billing_document_type: z.enum(BILLING_DOCUMENT_TYPES),
  historical_billing_documents: z
    .array(historicalBillingDocumentSchema)
    .max(POST_IMPORT_LIMITS.historical_billing_documents),
  additional_historical_transactions: z
    .array(transactionSchema)
    .max(POST_IMPORT_LIMITS.additional_historical_transactions)
    .optional(),
});

export const historicalStatementSchema = z.strictObject({
  bill_period_from_date: isoDate,
  bill_period_to_date: isoDate,
  statement_id: text(128),
  issued_date: isoDate,
  number: text(64),
  // Minor units (cents): an integer, so no rounding question arises.
  gross_amount: cents(),
  statement_path: text(PATH_TEXT).optional(),
});

export const statementsImportSchema = z.strictObject({
  ...accountKey,
  statements: z.array(historicalStatementSchema).min(1).max(POST_IMPORT_LIMITS.statements),
});

export const paymentInstructionSchema = z.strictObject({
  ...accountKey,
  vendor: choice('payment_instruction_vendor'),
  reference: text(),
  type: choice('payment_instruction_type'),
});

export const createAccountRequestSchema = z.strictObject({
  external_account_number: externalAccountNumber(),
  import_supplier_code: importSupplierCode(),
  operations_team_name: text(128),
  dry_run: z.boolean().optional(),
});

export type ImportNote = z.output<typeof importNoteSchema>;
export type NotesImport = z.output<typeof notesImportSchema>;
export type NoteResult = z.output<typeof noteResultSchema>;
export type TransactionsImport = z.output<typeof transactionsImportSchema>;
export type HistoricalBillingDocument = z.output<typeof historicalBillingDocumentSchema>;
export type BillingDocumentsImport = z.output<typeof billingDocumentsImportSchema>;
export type HistoricalStatement = z.output<typeof historicalStatementSchema>;
export type StatementsImport = z.output<typeof statementsImportSchema>;
export type PaymentInstruction = z.output<typeof paymentInstructionSchema>;
export type CreateAccountRequest = z.output<typeof createAccountRequestSchema>;
