import { Decimal } from 'decimal.js';

// Exact decimal arithmetic for money: amounts travel as decimal strings and are never summed as floats.
// The validation rules work in scaled integers (BigInt minor units), which is exact and several times
// cheaper than decimal.js for the hundreds of amounts in one payload.

export type TransactionType = 'CHARGE' | 'CREDIT' | 'PAYMENT' | 'REPAYMENT' | 'SUPPLY_CHARGE';

/** Balance convention: money in the customer's favour is positive. */
const SIGN: Readonly<Record<TransactionType, 1 | -1>> = {
  PAYMENT: 1,
  CREDIT: 1,
  CHARGE: -1,
  REPAYMENT: -1,
  SUPPLY_CHARGE: -1,
};

export function signedAmount(type: TransactionType, amount: string): Decimal {
  return new Decimal(amount).times(SIGN[type]);
}

/** A decimal string as an integer and its number of fraction digits: "-1.05" is -105n at 2 places. */
type Scaled = { units: bigint; places: number };

function scaled(value: string): Scaled {
  const dot = value.indexOf('.');
  if (dot === -1) return { units: BigInt(value), places: 0 };
  return { units: BigInt(value.slice(0, dot) + value.slice(dot + 1)), places: value.length - dot - 1 };
}

const POWERS: bigint[] = Array.from({ length: 41 }, (_, i) => 10n ** BigInt(i));
const pow10 = (n: number): bigint => POWERS[n] ?? 10n ** BigInt(n);

/** Money string (at most 2 places, as the schema outputs it) in cents. */
export function toCents(amount: string): bigint {
  const { units, places } = scaled(amount);
  if (places > 2) throw new RangeError(`Money has at most 2 decimal places: ${amount}`);
  return units * pow10(2 - places);
}

/** Cents as a money string with 2 places ("-12.00"). */
export function formatCents(cents: bigint): string {
  const negative = cents < 0n;
  const digits = (negative ? -cents : cents).toString().padStart(3, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** Signed total of transactions in cents (PAYMENT and CREDIT add; the other types subtract). */
export function signedTotal(transactions: readonly { type: TransactionType; amount: string }[]): bigint {
  let total = 0n;
  for (const t of transactions) {
    const cents = toCents(t.amount);
    total = SIGN[t.type] === 1 ? total + cents : total - cents;
  }
  return total;
}

/** True when `stated` is the product rounded to the cent, whichever rounding the source system used. */
export function matchesToTheCent(stated: string, ...factors: string[]): boolean {
  let units = 1n;
  let places = 0;
  for (const f of factors) {
    const s = scaled(f);
    units *= s.units;
    places += s.places;
  }
  const st = scaled(stated);
  // Compare at a common scale of at least 3 places, where half a cent is 5 units of 0.001.
  const scale = Math.max(places, st.places, 3);
  const diff = units * pow10(scale - places) - st.units * pow10(scale - st.places);
  const halfCent = 5n * pow10(scale - 3);
  return diff <= halfCent && diff >= -halfCent;
}
