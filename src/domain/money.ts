import { Decimal } from 'decimal.js';

// Exact decimal arithmetic for money: amounts travel as decimal strings and are never summed as floats.

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

export function sum(values: readonly (string | Decimal)[]): Decimal {
  return values.reduce<Decimal>((acc, v) => acc.plus(v), new Decimal(0));
}

/** Signed total of transactions (one decimal operation per transaction: this runs on every ledger). */
export function signedTotal(transactions: readonly { type: TransactionType; amount: string }[]): Decimal {
  let total = new Decimal(0);
  for (const t of transactions) total = SIGN[t.type] === 1 ? total.plus(t.amount) : total.minus(t.amount);
  return total;
}

const HALF_CENT = new Decimal('0.005');

/** True when `stated` is the product rounded to the cent, whichever rounding the source system used. */
export function matchesToTheCent(stated: string, ...factors: string[]): boolean {
  const product = factors.reduce<Decimal>((acc, f) => acc.times(f), new Decimal(1));
  return product.minus(stated).abs().lte(HALF_CENT);
}

export function formatMoney(value: Decimal): string {
  return value.toFixed(2);
}
