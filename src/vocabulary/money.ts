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

/**
 * The largest magnitude of money the service holds: 9,999,999,999.99 (10 integer digits), in cents. Validation
 * refuses any amount beyond it (`amount_out_of_range`), and a transaction import any balance it would take
 * beyond it, so every amount and balance stored as a JS number of cents is exact: one amount is under 10^12
 * cents, the sum of a whole import (1,000 transactions) under 10^15, and a balance plus one amount under
 * 2 × 10^12, all far below 2^53 (about 9.007 × 10^15), beyond which a number of cents would lose cents.
 */
export const MONEY_LIMIT_CENTS = 999_999_999_999;
/** The integer digits of the largest amount, and the amount as messages write it. */
export const MONEY_INTEGER_DIGITS = 10;
export const MONEY_LIMIT_TEXT = '9,999,999,999.99';

/** True when a number of cents is within the bound money is held to (|cents| ≤ `MONEY_LIMIT_CENTS`). */
export function withinMoneyLimit(cents: number): boolean {
  return cents <= MONEY_LIMIT_CENTS && cents >= -MONEY_LIMIT_CENTS;
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

// Fast path: with at most 15 digits a decimal's digits are an exact double, and integer arithmetic on
// doubles is exact as long as every result is a safe integer (a product or sum that is not gives an
// unsafe result, never a wrong safe one). Anything larger goes through BigInt.
const FLOAT_POWERS: number[] = Array.from({ length: 23 }, (_, i) => 10 ** i);
const isSafe = Number.isSafeInteger;

/** The digits of a decimal string as an integer (with its sign), or NaN beyond 15 digits. */
function smallUnits(value: string): number {
  let n = 0;
  let digits = 0;
  for (let i = value.charCodeAt(0) === 45 ? 1 : 0; i < value.length; i++) {
    const d = value.charCodeAt(i) - 48;
    if (d === -2) continue; // '.'
    if (d < 0 || d > 9 || ++digits > 15) return NaN;
    n = n * 10 + d;
  }
  return value.charCodeAt(0) === 45 ? -n : n;
}

function placesOf(value: string): number {
  const dot = value.indexOf('.');
  return dot === -1 ? 0 : value.length - dot - 1;
}

/** Money string (at most 2 places, as the schema outputs it) in cents. */
export function toCents(amount: string): bigint {
  const places = placesOf(amount);
  if (places > 2) throw new RangeError(`Money has at most 2 decimal places: ${amount}`);
  const cents = smallUnits(amount) * FLOAT_POWERS[2 - places]!;
  if (isSafe(cents)) return BigInt(cents);
  return scaled(amount).units * pow10(2 - places);
}

/** A transaction's effect on its ledger balance, in cents (its amount is a magnitude; the type gives the sign). */
export function signedMinor(type: TransactionType, amount: string): number {
  return SIGN[type] * toMinor(amount);
}

/**
 * Money string in cents as a JS number, for storage. Exact: validation holds amounts within
 * `MONEY_LIMIT_CENTS`; anything beyond 2^53 cents would lose cents, so it throws rather than round.
 */
export function toMinor(amount: string): number {
  const cents = toCents(amount);
  const minor = Number(cents);
  if (!Number.isSafeInteger(minor)) throw new RangeError(`Money beyond exact cents: ${amount}`);
  return minor;
}

/** Cents as a money string with 2 places ("-12.00"). */
export function formatCents(cents: bigint): string {
  const negative = cents < 0n;
  const digits = (negative ? -cents : cents).toString().padStart(3, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

type Signed = { type: TransactionType; amount: string };

/** Signed total of transactions in cents (PAYMENT and CREDIT add; the other types subtract). */
export function signedTotal(transactions: readonly Signed[]): bigint {
  let total = 0;
  for (const t of transactions) {
    const places = placesOf(t.amount);
    const cents = places > 2 ? NaN : smallUnits(t.amount) * FLOAT_POWERS[2 - places]!;
    total = SIGN[t.type] === 1 ? total + cents : total - cents;
    if (!isSafe(cents) || !isSafe(total)) return bigSignedTotal(transactions);
  }
  return BigInt(total);
}

function bigSignedTotal(transactions: readonly Signed[]): bigint {
  let total = 0n;
  for (const t of transactions) {
    const cents = toCents(t.amount);
    total = SIGN[t.type] === 1 ? total + cents : total - cents;
  }
  return total;
}

/** True when `stated` is a × b rounded to the cent, whichever rounding the source system used. */
export function matchesToTheCent(stated: string, a: string, b: string): boolean {
  const pa = placesOf(a);
  const pb = placesOf(b);
  const ps = placesOf(stated);
  // Compare at a common scale of at least 3 places, where half a cent is 5 units of 0.001.
  const scale = Math.max(pa + pb, ps, 3);
  const product = smallUnits(a) * smallUnits(b) * FLOAT_POWERS[scale - pa - pb]!;
  const statedUnits = smallUnits(stated) * FLOAT_POWERS[scale - ps]!;
  const halfCent = 5 * FLOAT_POWERS[scale - 3]!;
  const diff = product - statedUnits;
  if (isSafe(product) && isSafe(statedUnits) && isSafe(halfCent) && isSafe(diff))
    return diff <= halfCent && diff >= -halfCent;
  const x = scaled(a);
  const y = scaled(b);
  const s = scaled(stated);
  const bigDiff = x.units * y.units * pow10(scale - pa - pb) - s.units * pow10(scale - ps);
  const bigHalf = 5n * pow10(scale - 3);
  return bigDiff <= bigHalf && bigDiff >= -bigHalf;
}
