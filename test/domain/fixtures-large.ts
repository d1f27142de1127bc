import { Decimal } from 'decimal.js';
import { validAccountPayload } from './fixtures.js';

// The benchmark account: the valid base with 200 transactions (about 50 KB of JSON), balances computed.

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

function supplyCharge(i: number) {
  const start = addDays('2024-01-01', i * 4);
  const end = addDays(start, 3);
  const lines = ['CONSUMPTION_P1', 'CONSUMPTION_P2', 'POWER_P1'].map((rate_band, k) => {
    const units = new Decimal(50 + ((i * 7 + k * 13) % 90));
    const price = new Decimal('0.1234').plus(k / 100);
    return {
      rate_band,
      start_date: start,
      end_date: end,
      number_of_units: units.toNumber(),
      price_per_unit: price.toString(),
      net_amount: units.times(price).toDecimalPlaces(2).toFixed(2),
    };
  });
  const net = lines.reduce((acc, l) => acc.plus(l.net_amount), new Decimal(0));
  const tax = net.times('0.21').toDecimalPlaces(2);
  return {
    transaction_id: `BIG-H-${String(i).padStart(4, '0')}`,
    transaction_date: addDays(start, 5),
    amount: net.plus(tax).toFixed(2),
    type: 'SUPPLY_CHARGE',
    product_code: 'ELEC-2.0TD',
    display_note: `Factura periodo ${start} a ${end}`,
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

function simple(prefix: string, i: number, date: string) {
  const amount = new Decimal(((i * 37) % 9000) + 100).dividedBy(100).toFixed(2);
  const id = `${prefix}-${String(i).padStart(4, '0')}`;
  return i % 2 === 0
    ? {
        transaction_id: id,
        transaction_date: date,
        amount,
        type: 'CHARGE',
        reason: 'IMPORTED_CHARGE',
        display_note: 'Cargo importado',
      }
    : {
        transaction_id: id,
        transaction_date: date,
        amount: Number(amount),
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
        reference: `DD-${id}`,
      };
}

const signOf = (type: string): number => (type === 'PAYMENT' || type === 'CREDIT' ? 1 : -1);
const total = (list: { type: string; amount: string | number }[]): Decimal =>
  list.reduce((acc, t) => acc.plus(new Decimal(t.amount).times(signOf(t.type))), new Decimal(0));

/** The valid base account with 197 + 3 = 200 ledger transactions, as used by the `validate` benchmark. */
export function largeAccountPayload() {
  const payload = validAccountPayload();
  const historical = Array.from({ length: 100 }, (_, i) =>
    i % 3 === 0 ? supplyCharge(i) : simple('BIG-HP', i, addDays('2024-01-01', i * 4 + 2)),
  );
  const current = Array.from({ length: 97 }, (_, j) =>
    simple('BIG-C', j, addDays('2025-04-01', Math.floor(j * 0.9))),
  );
  const last = total(historical);
  const ledger = payload.ledgers[0]!;
  Object.assign(ledger, {
    historical_statement_transactions: historical,
    current_statement_transactions: current,
    last_statement_balance: last.toFixed(2),
    ledger_balance: last.plus(total(current)).toFixed(2),
  });
  return payload;
}
