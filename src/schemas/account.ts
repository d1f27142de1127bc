import { z } from 'zod';
import {
  choice,
  externalAccountNumber,
  importSupplierCode,
  isoDate,
  isoDatetime,
  jsonObject,
  LONG_TEXT,
  money,
  PATH_TEXT,
  SUPPLY_TYPES,
  text,
} from './primitives.js';
import { supplyAddressEntrySchema } from './supply.js';
import { transactionSchema } from './transaction.js';

export const namespacedValueSchema = z.strictObject({ namespace: text(128), value: text() });

export const userDetailSchema = z.strictObject({
  namespace: choice('user_detail_namespace', 128),
  value: text(),
});

export const customerSchema = z.strictObject({
  account_roles: z.array(choice('account_role')).min(1),
  user_details: z.array(userDetailSchema).optional(),
  given_name: text().optional(),
  family_name: text().optional(),
  email: text(254).optional(),
  mobile: text(32).optional(),
  landline: text(32).optional(),
});

/** A note without content is refused as a whole (`notes.<i>`), in the account payload and the note import. */
export const noteContentRequired = {
  message: 'A note needs a body or document_paths.',
  params: { code: 'note_body_or_document_path_not_found' },
} as const;

export const noteFields = {
  body: text(LONG_TEXT).optional(),
  created_at: isoDatetime,
  is_pinned: z.boolean().optional(),
  unpin_at: isoDatetime.optional(),
};

/** A note inside the account payload: its body is its whole content and its date is historical. */
export const accountNoteSchema = z
  .strictObject(noteFields)
  .refine((note): note is typeof note & { body: string } => note.body !== undefined, noteContentRequired);

export const ledgerSchema = z.strictObject({
  ledger_code: text(64),
  last_statement_balance: money(),
  last_statement_closing_date: isoDate,
  ledger_balance: money(),
  current_statement_transactions: z.array(transactionSchema).optional(),
  historical_statement_transactions: z.array(transactionSchema).optional(),
});

export const paymentScheduleSchema = z.strictObject({
  means: choice('payment_schedule_means'),
  start_date: isoDate,
  trigger: choice('payment_schedule_trigger'),
});

export const statementSchema = z.strictObject({
  bill_period_from_date: isoDate,
  bill_period_to_date: isoDate,
  statement_path: text(PATH_TEXT),
  statement_id: text(128),
  supply_type: z.enum(SUPPLY_TYPES).optional(),
});

export const metadataSchema = z.strictObject({ key: text(128), value: jsonObject() });

/** The account payload of validate-account and create-or-update (staging). */
export const accountPayloadSchema = z.strictObject({
  import_supplier: importSupplierCode(),
  external_account_number: externalAccountNumber(),
  account_type: choice('account_type'),
  customers: z.array(customerSchema).min(1),
  supply_addresses: z.array(supplyAddressEntrySchema).optional(),
  notes: z.array(accountNoteSchema).optional(),
  ledgers: z.array(ledgerSchema).optional(),
  payment_schedules: z.array(paymentScheduleSchema).optional(),
  statements: z.array(statementSchema).optional(),
  metadata: z.array(metadataSchema).optional(),
  references: z.array(namespacedValueSchema).optional(),
  billing_name: text(),
  billing_address1: text(),
  // 2, 3 and 5 complete the platform's five-line billing address; the interface shows 1 and 4.
  billing_address2: text().optional(),
  billing_address3: text().optional(),
  billing_address4: text().optional(),
  billing_address5: text().optional(),
  billing_postcode: text(16),
  sales_channel: choice('sales_channel').optional(),
  sales_subchannel: text().optional(),
  communication_preference: choice('communication_preference').optional(),
  /**
   * The team a v2 schedule creates the account for (else the supplier's default team). v1 validate and stage
   * check it is text and store it with the payload; a v1 create names its team in its own body.
   */
  operations_team_name: text(255).optional(),
});

export type Customer = z.output<typeof customerSchema>;
export type AccountNote = z.output<typeof accountNoteSchema>;
export type Ledger = z.output<typeof ledgerSchema>;
export type Statement = z.output<typeof statementSchema>;
export type AccountPayload = z.output<typeof accountPayloadSchema>;
export type AccountPayloadInput = z.input<typeof accountPayloadSchema>;
