import { z } from 'zod';
import { choice, decimal, isoDate, money, text, TRANSACTION_TYPES, LONG_TEXT } from './primitives.js';

export const lineItemSchema = z.strictObject({
  rate_band: choice('rate_band'),
  start_date: isoDate,
  end_date: isoDate,
  number_of_units: decimal(),
  net_amount: money(),
  price_per_unit: decimal(),
  units: z.array(decimal()).optional(),
});

export const taxItemSchema = z.strictObject({
  amount: money(),
  tax_type: choice('tax_type'),
  // Not money: with CURRENCY_PER_KWH the taxed value is a quantity of energy.
  value_taxed: decimal(),
  rate: decimal(),
  unit_type: choice('tax_unit_type'),
});

/** One financial transaction: used in ledgers, the transaction import and historical billing documents. */
export const transactionSchema = z.strictObject({
  transaction_id: text(128),
  transaction_date: isoDate,
  // A magnitude: the sign comes from `type` (see src/vocabulary/money.ts).
  amount: money({ nonNegative: true }),
  type: z.enum(TRANSACTION_TYPES),
  reason: choice('reason').optional(),
  payment_type: choice('payment_type').optional(),
  reference: text().optional(),
  display_note: text(LONG_TEXT).optional(),
  note: text(LONG_TEXT).optional(),
  product_code: text(64).optional(),
  line_items: z.array(lineItemSchema).min(1).optional(),
  tax_items: z.array(taxItemSchema).optional(),
});

export type LineItem = z.output<typeof lineItemSchema>;
export type TaxItem = z.output<typeof taxItemSchema>;
export type Transaction = z.output<typeof transactionSchema>;
