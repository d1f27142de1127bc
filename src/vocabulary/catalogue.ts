// Open enumerations (decisions §6): the interface shows some values and says the full list is "not shown",
// so each has a default list that a deployment can extend in configuration. Closed enumerations
// (transaction `type`, `supply_type`, `billing_document_type`) live in the schemas instead.

export const catalogueNames = [
  'account_type',
  'sales_channel',
  'communication_preference',
  'account_role',
  'user_detail_namespace',
  'reason',
  'payment_type',
  'rate_band',
  'tax_type',
  'tax_unit_type',
  'billable_item_unit_type',
  'payment_schedule_means',
  'payment_schedule_trigger',
  'payment_instruction_vendor',
  'payment_instruction_type',
] as const;

export type CatalogueName = (typeof catalogueNames)[number];
export type Catalogue = Readonly<Record<CatalogueName, ReadonlySet<string>>>;

const periods = (prefix: string): string[] => [1, 2, 3, 4, 5, 6].map((n) => `${prefix}_P${n}`);

export const defaultCatalogueValues: Readonly<Record<CatalogueName, readonly string[]>> = {
  account_type: ['DOMESTIC', 'BUSINESS'],
  sales_channel: ['DIRECT', 'PARTNERS', 'PRICE_COMPARISON', 'TELESALES', 'FIELD_SALES', 'BROKER', 'ONLINE'],
  communication_preference: ['ONLINE', 'PRINT'],
  account_role: ['ACCOUNT_HOLDER', 'JOINT_ACCOUNT_HOLDER', 'AUTHORISED_CONTACT'],
  user_detail_namespace: ['fiscal_code', 'first_family_name', 'second_family_name'],
  reason: [
    'IMPORTED_CHARGE',
    'IMPORTED_CREDIT',
    'ACCOUNT_CHARGE_PAYMENT',
    'FULL_CREDIT_REFUND',
    'PARTIAL_CREDIT_REFUND',
    'GENERAL_CREDIT',
    'GOODWILL_CREDIT',
    'BALANCE_ADJUSTMENT',
    'LATE_PAYMENT_FEE',
  ],
  payment_type: [
    'DD_FIRST_COLLECTION',
    'DD_REGULAR_COLLECTION',
    'DD_RE_PRESENTATION',
    'DD_FINAL_COLLECTION',
    'DIRECT_CREDIT',
    'BACS_DEPOSIT',
    'BANK_TRANSFER',
    'DEBIT_CARD',
    'CREDIT_CARD',
    'CHEQUE',
    'CASH',
  ],
  rate_band: [
    'CONSUMPTION_STANDARD',
    ...periods('CONSUMPTION'),
    ...periods('POWER'),
    'STANDING_CHARGE',
    'METER_RENTAL',
  ],
  tax_type: ['VAT', 'ELECTRICITY_TAX', 'HYDROCARBON_TAX', 'IGIC', 'IPSI'],
  tax_unit_type: ['PROPORTION', 'CURRENCY_PER_KWH'],
  billable_item_unit_type: ['PER_ITEM', 'PER_DAY', 'PER_MONTH', 'PER_KWH'],
  payment_schedule_means: ['MANUAL', 'DIRECT_DEBIT', 'CARD'],
  payment_schedule_trigger: ['BILL', 'FIXED_SCHEDULE', 'BALANCE_THRESHOLD'],
  // What PAYMENT_VENDORS enables by default; a deployment's list replaces it (see `buildCatalogue`).
  payment_instruction_vendor: ['STRIPE'],
  payment_instruction_type: ['CARD', 'DIRECT_DEBIT'],
};

/**
 * The default catalogue extended by a deployment's additions (values are added, never removed), except the
 * lists the deployment sets whole in `fixed` (the payment vendors it enables).
 */
export function buildCatalogue(
  extra: Partial<Record<CatalogueName, readonly string[]>> = {},
  fixed: Partial<Record<CatalogueName, readonly string[]>> = {},
): Catalogue {
  const entries = catalogueNames.map((name) => [
    name,
    new Set(fixed[name] ?? [...defaultCatalogueValues[name], ...(extra[name] ?? [])]) as ReadonlySet<string>,
  ]);
  return Object.freeze(Object.fromEntries(entries)) as Catalogue;
}

export const defaultCatalogue: Catalogue = buildCatalogue();

/** Up to this many allowed values are named in an `invalid_choice` error; longer lists are only referred to. */
export const MAX_LISTED_CHOICES = 20;

/** The tail of an `invalid_choice` detail: the allowed values when there are few enough to read. */
export function allowedValuesHint(values: Iterable<string>): string {
  const list = [...values];
  return list.length <= MAX_LISTED_CHOICES
    ? `expected one of ${list.join(', ')}.`
    : `${list.length} values are allowed; the catalogue lists them.`;
}

/** A deployment's additions (CATALOGUE_EXTRA) restricted to the catalogue's names. */
export function knownCatalogueExtra(
  extra: Readonly<Record<string, string[]>>,
): Partial<Record<CatalogueName, string[]>> {
  return Object.fromEntries(
    Object.entries(extra).filter(([name]) => catalogueNames.includes(name as CatalogueName)),
  );
}
