import type { Ledger } from '../../../schemas/account.js';
import type { Transaction } from '../../../schemas/transaction.js';
import { formatCents, matchesToTheCent, signedTotal, toCents } from '../../../vocabulary/money.js';
import { child } from '../field-error.js';
import type { Loose } from '../salvage.js';
import { checkChoice, checkOrder, checkUnique, eachParsed, quote, type RuleEnv } from './env.js';

type Txn = Loose<Transaction>;
type TxnType = NonNullable<Txn['type']>;

export type LocatedTransaction = { txn: Txn; attr: string };

const REQUIRED_FOR: Readonly<Record<TxnType, readonly TypedField[]>> = {
  PAYMENT: ['payment_type'],
  REPAYMENT: ['payment_type'],
  CHARGE: ['reason'],
  CREDIT: ['reason'],
  SUPPLY_CHARGE: ['product_code', 'line_items'],
};

const ONLY_FOR: readonly [TypedField, readonly TxnType[]][] = [
  ['payment_type', ['PAYMENT', 'REPAYMENT']],
  ['product_code', ['SUPPLY_CHARGE']],
  ['line_items', ['SUPPLY_CHARGE']],
  ['tax_items', ['SUPPLY_CHARGE']],
];

// Tax units where amount = value_taxed × rate holds; catalogue extensions may add units with other meanings.
const MULTIPLICATIVE_TAX_UNITS = new Set(['PROPORTION', 'CURRENCY_PER_KWH']);

// The fields the two tables above name, one bit each: a transaction's fields become a mask with a few
// plain property reads, so the common case (every field right for its type) does no keyed lookups.
const FIELD_BITS = { payment_type: 1, reason: 2, product_code: 4, line_items: 8, tax_items: 16 } as const;
type TypedField = keyof typeof FIELD_BITS;

function presentFields(t: Txn): number {
  return (
    (t.payment_type === undefined ? 0 : FIELD_BITS.payment_type) |
    (t.reason === undefined ? 0 : FIELD_BITS.reason) |
    (t.product_code === undefined ? 0 : FIELD_BITS.product_code) |
    (t.line_items === undefined ? 0 : FIELD_BITS.line_items) |
    (t.tax_items === undefined ? 0 : FIELD_BITS.tax_items)
  );
}

const maskOf = (fields: readonly TypedField[]): number => fields.reduce((m, f) => m | FIELD_BITS[f], 0);
const TYPES = Object.keys(REQUIRED_FOR) as TxnType[];
const REQUIRED_MASK = Object.fromEntries(TYPES.map((type) => [type, maskOf(REQUIRED_FOR[type])])) as Readonly<
  Record<TxnType, number>
>;
const FORBIDDEN_MASK = Object.fromEntries(
  TYPES.map((type) => [type, maskOf(ONLY_FOR.filter(([, types]) => !types.includes(type)).map(([f]) => f))]),
) as Readonly<Record<TxnType, number>>;

function checkTypeFields(env: RuleEnv, t: Txn, attr: string): void {
  const type = t.type;
  if (type === undefined) return;
  const present = presentFields(t);
  const missing = REQUIRED_MASK[type] & ~present;
  // A field that failed its own schema is absent here; only claim "missing" when the whole item parsed.
  if (missing !== 0 && env.isComplete(t)) {
    for (const field of REQUIRED_FOR[type]) {
      if (t[field] === undefined)
        env.out.add(
          'required_for_transaction_type',
          child(attr, field),
          `${type} transactions need ${field}.`,
        );
    }
  }
  if ((present & FORBIDDEN_MASK[type]) === 0) return;
  for (const [field, types] of ONLY_FOR) {
    if (t[field] !== undefined && !types.includes(type)) {
      env.out.add(
        'field_not_allowed_for_transaction_type',
        child(attr, field),
        `${field} is only used with ${types.join(' and ')} transactions.`,
      );
    }
  }
}

function checkLineItems(env: RuleEnv, items: NonNullable<Txn['line_items']>, attr: string): void {
  const rateBands = env.catalogue.rate_band;
  for (let i = 0; i < items.length; i++) {
    const li = items[i];
    if (li === undefined) continue;
    // Paths are built only for an item with a problem.
    if (li.rate_band !== undefined && !rateBands.has(li.rate_band))
      checkChoice(env, 'rate_band', li.rate_band, child(attr, 'line_items', i), 'rate_band');
    if (li.start_date !== undefined && li.end_date !== undefined && li.start_date > li.end_date)
      checkOrder(env, li.start_date, li.end_date, child(attr, 'line_items', i), 'start_date');
    if (
      li.net_amount !== undefined &&
      li.price_per_unit !== undefined &&
      li.number_of_units !== undefined &&
      !matchesToTheCent(li.net_amount, li.price_per_unit, li.number_of_units)
    ) {
      env.out.add(
        'incorrect_line_item_net_amount',
        child(attr, 'line_items', i, 'net_amount'),
        `net_amount ${li.net_amount} is not price_per_unit × number_of_units to the cent.`,
      );
    }
  }
}

function checkTaxItems(env: RuleEnv, items: NonNullable<Txn['tax_items']>, attr: string): void {
  for (let i = 0; i < items.length; i++) {
    const tax = items[i];
    if (tax === undefined) continue;
    if (tax.tax_type !== undefined && !env.catalogue.tax_type.has(tax.tax_type))
      checkChoice(env, 'tax_type', tax.tax_type, child(attr, 'tax_items', i), 'tax_type');
    if (tax.unit_type !== undefined && !env.catalogue.tax_unit_type.has(tax.unit_type))
      checkChoice(env, 'tax_unit_type', tax.unit_type, child(attr, 'tax_items', i), 'unit_type');
    if (
      tax.unit_type !== undefined &&
      MULTIPLICATIVE_TAX_UNITS.has(tax.unit_type) &&
      tax.amount !== undefined &&
      tax.value_taxed !== undefined &&
      tax.rate !== undefined &&
      !matchesToTheCent(tax.amount, tax.value_taxed, tax.rate)
    ) {
      env.out.add(
        'incorrect_tax_item_amount',
        child(attr, 'tax_items', i, 'amount'),
        `amount ${tax.amount} is not value_taxed × rate to the cent.`,
      );
    }
  }
}

function checkSupplyChargeItems(env: RuleEnv, t: Txn, attr: string): void {
  if (t.line_items !== undefined) checkLineItems(env, t.line_items, attr);
  if (t.tax_items !== undefined) checkTaxItems(env, t.tax_items, attr);
  if (
    t.type === 'SUPPLY_CHARGE' &&
    env.isComplete(t) &&
    t.amount !== undefined &&
    t.line_items !== undefined
  ) {
    let total = 0n;
    for (const li of t.line_items) if (li?.net_amount !== undefined) total += toCents(li.net_amount);
    for (const tax of t.tax_items ?? []) if (tax?.amount !== undefined) total += toCents(tax.amount);
    if (total !== toCents(t.amount)) {
      env.out.add(
        'supply_charge_amount_mismatch',
        child(attr, 'amount'),
        `amount ${t.amount} differs from line items plus taxes (${formatCents(total)}).`,
      );
    }
  }
}

/** Rules of one transaction, wherever it appears. */
export function checkTransaction(env: RuleEnv, t: Txn, attr: string): void {
  checkChoice(env, 'reason', t.reason, attr, 'reason');
  checkChoice(env, 'payment_type', t.payment_type, attr, 'payment_type');
  if (t.transaction_date !== undefined && t.transaction_date > env.today) {
    env.out.add(
      'transaction_in_future',
      child(attr, 'transaction_date'),
      `The transaction is dated after today (${env.today}).`,
    );
  }
  checkTypeFields(env, t, attr);
  checkSupplyChargeItems(env, t, attr);
}

/** Reports every occurrence after the first of a transaction_id, across all the payload's lists. */
export function checkTransactionIds(env: RuleEnv, located: readonly LocatedTransaction[]): void {
  const seen = new Set<string>();
  for (const { txn, attr } of located) {
    const id = txn.transaction_id;
    if (id === undefined) continue;
    if (seen.has(id))
      env.out.add(
        'duplicate_transaction_ids',
        child(attr, 'transaction_id'),
        `Duplicate transaction_id ${quote(id)}.`,
      );
    else seen.add(id);
  }
}

/** Signed total, or null when some transaction did not parse (the sum would be meaningless). */
function completeTotal(list: readonly (Txn | undefined)[]): bigint | null {
  for (const t of list) if (t?.type === undefined || t.amount === undefined) return null;
  return signedTotal(list as readonly { type: TxnType; amount: string }[]);
}

function checkBalances(env: RuleEnv, l: Loose<Ledger>, attr: string): void {
  if (!env.isComplete(l) || l.last_statement_balance === undefined || l.ledger_balance === undefined) return;
  // Without a historical list the last statement balance stands alone as the opening balance.
  if (l.historical_statement_transactions !== undefined) {
    const historical = completeTotal(l.historical_statement_transactions);
    if (historical !== null && historical !== toCents(l.last_statement_balance)) {
      env.out.add(
        'historical_statement_transactions_balance_mismatch',
        child(attr, 'last_statement_balance'),
        `Historical statement transactions sum to ${formatCents(historical)}, not ${l.last_statement_balance}.`,
      );
    }
  }
  const current = completeTotal(l.current_statement_transactions ?? []);
  if (current === null) return;
  const expected = current + toCents(l.last_statement_balance);
  if (expected !== toCents(l.ledger_balance)) {
    env.out.add(
      'balance_mismatch_on_ledger_balance',
      child(attr, 'ledger_balance'),
      `last_statement_balance plus current statement transactions is ${formatCents(expected)}, not ${l.ledger_balance}.`,
    );
  }
}

/** Rules of every ledger; returns their transactions for payload-wide checks. */
export function checkLedgers(
  env: RuleEnv,
  ledgers: readonly (Loose<Ledger> | undefined)[] | undefined,
  base: string,
): LocatedTransaction[] {
  const located: LocatedTransaction[] = [];
  const codes: { key: string | undefined; attr: string }[] = [];
  eachParsed(ledgers, (l, i) => {
    const attr = child(base, i);
    codes.push({ key: l.ledger_code, attr: child(attr, 'ledger_code') });
    const closing = l.last_statement_closing_date;
    const historical = l.historical_statement_transactions;
    // One path per transaction: the list's prefix is built once.
    const historicalPrefix = `${child(attr, 'historical_statement_transactions')}.`;
    for (let j = 0; historical !== undefined && j < historical.length; j++) {
      const t = historical[j];
      if (t === undefined) continue;
      const at = historicalPrefix + j;
      checkTransaction(env, t, at);
      located.push({ txn: t, attr: at });
      if (closing !== undefined && t.transaction_date !== undefined && t.transaction_date > closing) {
        env.out.add(
          'historical_transaction_after_closing_date',
          child(at, 'transaction_date'),
          `Historical transactions must be dated on or before ${closing}.`,
        );
      }
    }
    const current = l.current_statement_transactions;
    const currentPrefix = `${child(attr, 'current_statement_transactions')}.`;
    for (let j = 0; current !== undefined && j < current.length; j++) {
      const t = current[j];
      if (t === undefined) continue;
      const at = currentPrefix + j;
      checkTransaction(env, t, at);
      located.push({ txn: t, attr: at });
      if (closing !== undefined && t.transaction_date !== undefined && t.transaction_date <= closing) {
        env.out.add(
          'current_transaction_not_after_closing_date',
          child(at, 'transaction_date'),
          `Current statement transactions must be dated after ${closing}.`,
        );
      }
    }
    checkBalances(env, l, attr);
  });
  checkUnique(env, codes, 'duplicate_ledger_entries_found', 'ledger_code');
  return located;
}
