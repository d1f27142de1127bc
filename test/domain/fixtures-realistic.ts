import { Decimal } from 'decimal.js';
import { validAccountPayload } from './fixtures.js';

/**
 * The realistic account: what a migration team sends, not a minimal valid payload. The valid base account
 * (customers, one supply address with an electricity and a gas point, notes, metadata, a payment schedule)
 * with one ledger per supply (electricity, gas, then more when asked) carrying years of history:
 *
 * - historical (on or before the last statement closing date), `months` back: every month a CHARGE bill
 *   (IMPORTED_CHARGE, display and internal note, the amount a decimal string every third month) and its
 *   PAYMENT (DD_REGULAR_COLLECTION) a few days later; once a year a loyalty CREDIT and a REPAYMENT
 *   (DIRECT_CREDIT);
 * - current (inside the open period): the last bill's payment, three monthly SUPPLY_CHARGEs with line items
 *   (units x price exact to the cent) and 21 % VAT, their payments, and one extra CHARGE;
 * - `last_statement_balance` is the exact signed sum of the historical transactions, `ledger_balance` that
 *   plus the current ones.
 *
 * At the default 42 months and 2 ledgers: about 200 transactions and 50 KB of JSON. Every date is before
 * `today`; every id is unique within the account. Deterministic for a given input.
 */
export type RealisticOptions = {
  /** Months of history before the last statement closing date (default 42). */
  months?: number;
  /** Number of ledgers (default 2: ELECTRICITY and GAS). */
  ledgers?: number;
  /** The day the account is sent (YYYY-MM-DD); the open period is the four months before it. */
  today?: string;
  importSupplier?: string;
  externalAccountNumber?: string;
};

const LEDGER_CODES = ['ELECTRICITY', 'GAS'];

function monthStart(day: string, monthsBack: number): string {
  const d = new Date(`${day.slice(0, 7)}-01T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() - monthsBack);
  return d.toISOString().slice(0, 10);
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** A deterministic amount in [min, min + spread) cents, as a 2-decimal string. */
function amountFor(seed: number, min: number, spread: number): Decimal {
  return new Decimal(min + ((seed * 7919) % spread)).dividedBy(100);
}

type Tx = Record<string, unknown> & { type: string; amount: string | number };

function supplyCharge(id: string, from: string, seed: number): Tx {
  const to = addDays(monthStart(addDays(from, 40), 0), -1);
  const lines = ['CONSUMPTION_P1', 'CONSUMPTION_P2', 'POWER_P1'].map((rate_band, k) => {
    const units = new Decimal(40 + ((seed * 13 + k * 29) % 160));
    const price = new Decimal('0.1187').plus(new Decimal(k).times('0.0211'));
    return {
      rate_band,
      start_date: from,
      end_date: to,
      number_of_units: units.toNumber(),
      price_per_unit: price.toString(),
      net_amount: units.times(price).toDecimalPlaces(2).toFixed(2),
    };
  });
  const net = lines.reduce((acc, l) => acc.plus(l.net_amount), new Decimal(0));
  const tax = net.times('0.21').toDecimalPlaces(2);
  return {
    transaction_id: id,
    transaction_date: addDays(to, 3),
    amount: net.plus(tax).toFixed(2),
    type: 'SUPPLY_CHARGE',
    product_code: 'ELEC-2.0TD',
    display_note: `Factura del periodo ${from} a ${to}`,
    line_items: lines,
    tax_items: [
      {
        amount: tax.toFixed(2),
        tax_type: 'VAT',
        value_taxed: net.toFixed(2),
        rate: '0.21',
        unit_type: 'PROPORTION',
      },
    ],
  };
}

const signOf = (type: string): number => (type === 'PAYMENT' || type === 'CREDIT' ? 1 : -1);
export const signedTotal = (list: readonly Tx[]): Decimal =>
  list.reduce((acc, t) => acc.plus(new Decimal(t.amount).times(signOf(t.type))), new Decimal(0));

function ledger(code: string, index: number, months: number, closing: string) {
  const tag = code.slice(0, 4);
  const historical: Tx[] = [];
  let lastBill: Decimal = new Decimal(0);
  let lastBillDate = closing;
  for (let m = months; m >= 1; m--) {
    const start = monthStart(closing, m - 1);
    const seed = index * 1000 + m;
    const bill = amountFor(seed, 2500, 9000);
    lastBill = bill;
    lastBillDate = addDays(start, 4);
    historical.push({
      transaction_id: `${tag}-H-${m}-B`,
      transaction_date: lastBillDate,
      amount: m % 3 === 0 ? bill.toFixed(2) : bill.toNumber(),
      type: 'CHARGE',
      reason: 'IMPORTED_CHARGE',
      reference: `FAC-${tag}-${start.slice(0, 7)}-${String(seed).padStart(6, '0')}`,
      display_note: `Factura ${start.slice(0, 7)}`,
      note: `Importada del sistema anterior (lote ${seed})`,
    });
    // The last month's bill is paid after the closing date, in the current period.
    if (m > 1)
      historical.push({
        transaction_id: `${tag}-H-${m}-P`,
        transaction_date: addDays(start, 9),
        amount: bill.toFixed(2),
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
        reference: `DD-${tag}-${m}`,
        display_note: `Cobro por domiciliación de la factura ${start.slice(0, 7)}`,
      });
    if (m % 12 === 6) {
      const credit = amountFor(seed, 500, 1500);
      historical.push(
        {
          transaction_id: `${tag}-H-${m}-L`,
          transaction_date: addDays(start, 14),
          amount: credit.toFixed(2),
          type: 'CREDIT',
          reason: 'GOODWILL_CREDIT',
          display_note: 'Bonificación por fidelidad',
        },
        {
          transaction_id: `${tag}-H-${m}-R`,
          transaction_date: addDays(start, 20),
          amount: credit.toFixed(2),
          type: 'REPAYMENT',
          payment_type: 'DIRECT_CREDIT',
          reference: `TR-${tag}-${m}`,
        },
      );
    }
  }
  const open = addDays(closing, 1);
  const current: Tx[] = [
    {
      transaction_id: `${tag}-C-P0`,
      transaction_date: addDays(lastBillDate < closing ? open : lastBillDate, 2),
      amount: lastBill.toFixed(2),
      type: 'PAYMENT',
      payment_type: 'DD_REGULAR_COLLECTION',
      reference: `DD-${tag}-0`,
    },
  ];
  for (let k = 0; k < 3; k++) {
    const from = monthStart(open, -k);
    const charge = supplyCharge(`${tag}-C-S${k}`, from, index * 100 + k);
    current.push(charge, {
      transaction_id: `${tag}-C-P${k + 1}`,
      transaction_date: addDays(charge.transaction_date as string, 5),
      amount: charge.amount,
      type: 'PAYMENT',
      payment_type: 'DD_REGULAR_COLLECTION',
      reference: `DD-${tag}-${k + 1}`,
    });
  }
  current.push({
    transaction_id: `${tag}-C-X`,
    transaction_date: addDays(open, 20),
    amount: '4.99',
    type: 'CHARGE',
    reason: 'LATE_PAYMENT_FEE',
  });
  const last = signedTotal(historical);
  return {
    ledger_code: code,
    last_statement_balance: last.toFixed(2),
    last_statement_closing_date: closing,
    ledger_balance: last.plus(signedTotal(current)).toFixed(2),
    historical_statement_transactions: historical,
    current_statement_transactions: current,
  };
}

export function realisticAccountPayload(options: RealisticOptions = {}) {
  const months = options.months ?? 42;
  const count = options.ledgers ?? 2;
  const today = options.today ?? new Date().toISOString().slice(0, 10);
  // The open period: the four months before today's month (its three supply charges are all in the past).
  const closing = addDays(monthStart(today, 4), -1);
  const base = validAccountPayload();
  const codes = Array.from({ length: count }, (_, i) => LEDGER_CODES[i] ?? `LEDGER_${i + 1}`);
  return {
    ...base,
    import_supplier: options.importSupplier ?? base.import_supplier,
    external_account_number: options.externalAccountNumber ?? base.external_account_number,
    notes: [base.notes[0]!],
    statements: [
      {
        bill_period_from_date: monthStart(closing, 0),
        bill_period_to_date: closing,
        statement_path: `statements/${closing.slice(0, 7)}/statement.pdf`,
        statement_id: `ST-${closing.slice(0, 7)}`,
        supply_type: 'ELECTRICITY',
      },
    ],
    ledgers: codes.map((code, i) => ledger(code, i, months, closing)),
  };
}

export type RealisticAccount = ReturnType<typeof realisticAccountPayload>;

/** Number of ledger transactions in a payload. */
export function transactionCount(payload: {
  ledgers?: { historical_statement_transactions: unknown[]; current_statement_transactions: unknown[] }[];
}): number {
  return (payload.ledgers ?? []).reduce(
    (n, l) => n + l.historical_statement_transactions.length + l.current_statement_transactions.length,
    0,
  );
}
