import { z } from 'zod';
import {
  cents,
  choice,
  decimal,
  decimalString,
  integer,
  isoDate,
  isoDatetime,
  money,
  SUPPLY_TYPES,
  text,
} from './primitives.js';

export const structuredStreetAddressSchema = z.strictObject({
  street_type: text(64).optional(),
  street_name: text().optional(),
  street_number: text(32).optional(),
  door: text(32).optional(),
  floor: text(32).optional(),
  gate: text(32).optional(),
  stair: text(32).optional(),
  block: text(32).optional(),
  address_extra_info: text().optional(),
});

export const supplyAddressSchema = z.strictObject({
  locality: text().optional(),
  administrative_area: text().optional(),
  postal_code: text(16),
  country: text(8),
  structured_street_address: structuredStreetAddressSchema.optional(),
});

const contractualMaxPower = z.array(decimal()).superRefine((values, ctx) => {
  if (values.length !== 6 || values.some((v) => v.startsWith('-'))) {
    ctx.addIssue({
      code: 'custom',
      message: 'Provide exactly 6 non-negative power values (P1 to P6).',
      params: { code: 'invalid_contractual_max_power' },
    });
  }
});

export const agreementSchema = z.strictObject({
  tariff_code: text(64),
  effective_from: isoDate,
  // Absent means open-ended.
  effective_to: isoDate.optional(),
  cnae: text(16).optional(),
  // Gas only.
  params: z.strictObject({ availability_discount: decimal(), consumption_discount: decimal() }).optional(),
  // Electricity only.
  contractual_max_power: contractualMaxPower.optional(),
  annual_consumption: decimal().optional(),
  estimated_monthly_fee_in_cents: cents().min(0).optional(),
  atr_type: text(64).optional(),
});

export const readingSchema = z.strictObject({
  meter_serial_number: text(64),
  interval_start: isoDatetime,
  interval_end: isoDatetime,
  consumption_delta: decimalString(),
  source: integer().min(0).optional(),
});

export const billableItemSchema = z.strictObject({
  net_amount: money(),
  billable_item_type: text(64),
  interval_start: isoDate,
  interval_end: isoDate,
  number_of_units: decimal(),
  price_per_unit: decimal(),
  unit_type: choice('billable_item_unit_type'),
});

export const supplyPointSchema = z.strictObject({
  identifier: text(32),
  distributor_ree_code: text(16).optional(),
  supply_type: z.enum(SUPPLY_TYPES),
  supply_start_date: isoDate,
  last_billed_to_date: isoDate.optional(),
  atr: text(64).optional(),
  agreements: z.array(agreementSchema).optional(),
  // Gas only.
  readings: z.array(readingSchema).optional(),
  billable_items: z.array(billableItemSchema).optional(),
});

export const supplyAddressEntrySchema = z.strictObject({
  supply_address: supplyAddressSchema,
  customer_at_supply_address_from_date: isoDate,
  supply_points: z.array(supplyPointSchema).optional(),
});

export type Agreement = z.output<typeof agreementSchema>;
export type Reading = z.output<typeof readingSchema>;
export type BillableItem = z.output<typeof billableItemSchema>;
export type SupplyPoint = z.output<typeof supplyPointSchema>;
export type SupplyAddress = z.output<typeof supplyAddressSchema>;
export type SupplyAddressEntry = z.output<typeof supplyAddressEntrySchema>;
