import fc from 'fast-check';
import { cupsCheckLetters, dniLetter } from '../../src/domain/region/spanish-ids.js';
import { TODAY, validAccountPayload } from './fixtures.js';

// Generators of valid variations of the base account: identifiers with correct check characters,
// contact details valid for Spain, and ledgers whose balances are computed in integer cents.

const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));

export const dniArb = fc
  .integer({ min: 0, max: 99_999_999 })
  .map((n) => `${String(n).padStart(8, '0')}${dniLetter(n)}`);
export const cupsArb = digits(16).map((d) => `ES${d}${cupsCheckLetters(d)}`);
export const mobileArb = digits(8).map((d) => `6${d}`);
export const postcodeArb = fc
  .tuple(fc.integer({ min: 1, max: 52 }), digits(3))
  .map(([p, d]) => `${String(p).padStart(2, '0')}${d}`);
export const emailArb = fc.stringMatching(/^[a-z]{1,10}$/).map((l) => `c${l}@correo-cliente.es`);
const nameArb = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0);

const TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT'] as const;
const EXTRA: Record<(typeof TYPES)[number], Record<string, string>> = {
  CHARGE: { reason: 'IMPORTED_CHARGE' },
  CREDIT: { reason: 'GENERAL_CREDIT' },
  PAYMENT: { payment_type: 'DIRECT_CREDIT' },
  REPAYMENT: { payment_type: 'DIRECT_CREDIT' },
};

const txnArb = fc.record({
  type: fc.constantFrom(...TYPES),
  cents: fc.integer({ min: 0, max: 1_000_000 }),
  asString: fc.boolean(),
  day: fc.integer({ min: 0, max: 27 }),
});

type TxnSeed = { type: (typeof TYPES)[number]; cents: number; asString: boolean; day: number };

const euros = (cents: number) =>
  `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100)}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;
const signed = (t: TxnSeed) => (t.type === 'PAYMENT' || t.type === 'CREDIT' ? t.cents : -t.cents);

function toTxn(t: TxnSeed, id: string, month: string) {
  const amount = t.asString ? euros(t.cents) : t.cents / 100;
  return {
    transaction_id: id,
    transaction_date: `${month}-${String(t.day + 1).padStart(2, '0')}`,
    amount,
    type: t.type,
    ...EXTRA[t.type],
  };
}

export const ledgerArb = (code: string) =>
  fc
    .record({ historical: fc.array(txnArb, { maxLength: 15 }), current: fc.array(txnArb, { maxLength: 15 }) })
    .map(({ historical, current }) => {
      const last = historical.reduce((s, t) => s + signed(t), 0); // integer cents: exact
      const balance = current.reduce((s, t) => s + signed(t), last);
      return {
        ledger_code: code,
        last_statement_balance: euros(last),
        last_statement_closing_date: '2025-02-28',
        ledger_balance: balance / 100,
        historical_statement_transactions: historical.map((t, i) => toTxn(t, `${code}-H-${i}`, '2025-01')),
        current_statement_transactions: current.map((t, i) =>
          toTxn(t, `${code}-C-${i}`, TODAY.slice(0, 7) === '2025-06' ? '2025-05' : '2025-03'),
        ),
      };
    });

/** Valid account payloads: the base fixture with generated people, identifiers and ledgers. */
export const validAccountArb = fc
  .record({
    dni: dniArb,
    mobile: mobileArb,
    email: emailArb,
    postcode: postcodeArb,
    cups: cupsArb,
    name: nameArb,
    ledgers: fc.tuple(ledgerArb('E'), ledgerArb('G')),
  })
  .map(({ dni, mobile, email, postcode, cups, name, ledgers }) => {
    const p = validAccountPayload();
    const holder = p.customers[0]!;
    Object.assign(holder, {
      mobile,
      email,
      given_name: name,
      user_details: [{ namespace: 'fiscal_code', value: dni }],
    });
    p.billing_postcode = postcode;
    p.supply_addresses[0]!.supply_points[1]!.identifier = cups;
    (p as { ledgers: unknown[] }).ledgers = ledgers;
    return p;
  });
