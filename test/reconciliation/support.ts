import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../support/app.js';

// What reconciliation should answer, worked out here without the service's code: the digest with plain
// createHash and BigInt, signed cents from the amount's text and the type.

const MODULUS = 1n << 256n;
const POSITIVE = new Set(['PAYMENT', 'CREDIT']);

/** A decimal (a number or a string, at most 2 places, maybe negative) in cents. */
export function decimalCents(value: string | number): bigint {
  const text = String(value);
  const negative = text.startsWith('-');
  const [units, fraction = ''] = (negative ? text.slice(1) : text).split('.');
  const cents = BigInt(units!) * 100n + BigInt(fraction.padEnd(2, '0'));
  return negative ? -cents : cents;
}

/** A transaction's signed cents: its amount (a magnitude) with the sign of its type. */
export function signedCents(type: string, amount: string | number): bigint {
  const cents = decimalCents(amount);
  return POSITIVE.has(type) ? cents : -cents;
}

/** The digest of one ledger: SHA-256 of `<ledger>\t<id>\t<cents>` per transaction, summed modulo 2^256. */
export function independentDigest(ledgerCode: string, transactions: Iterable<{ id: string; cents: bigint }>) {
  let sum = 0n;
  for (const t of transactions) {
    const hash = createHash('sha256').update(`${ledgerCode}\t${t.id}\t${t.cents.toString()}`, 'utf8');
    sum = (sum + BigInt(`0x${hash.digest('hex')}`)) % MODULUS;
  }
  return sum.toString(16).padStart(64, '0');
}

/** Cents as the body writes money: two decimals, "-" for negatives. */
export function money(cents: bigint): string {
  const negative = cents < 0n;
  const digits = (negative ? -cents : cents).toString().padStart(3, '0');
  return `${negative ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

export type RawTransaction = {
  transaction_id: string;
  transaction_date: string;
  type: string;
  amount: string | number;
  [field: string]: unknown;
};

export const ORIGINS = [
  'historical_statement',
  'current_statement',
  'imported',
  'billing_document',
  'additional_historical',
] as const;
export type Origin = (typeof ORIGINS)[number];

/** One ledger as the test expects it: its transactions by origin, balance and billing documents. */
export class ExpectedLedger {
  readonly transactions = new Map<string, { cents: bigint; origin: Origin }>();
  billingDocuments = 0;
  constructor(
    readonly code: string,
    public balance: bigint,
    readonly lastStatementBalance: bigint,
    readonly closingDate: string,
  ) {}

  /** Adds transactions not already on the account (`taken`: every id of the account); imported ones move the balance. */
  add(raws: readonly RawTransaction[], origin: Origin, taken: Set<string>): void {
    for (const t of raws) {
      if (taken.has(t.transaction_id)) continue;
      taken.add(t.transaction_id);
      const cents = signedCents(t.type, t.amount);
      this.transactions.set(t.transaction_id, { cents, origin });
      if (origin === 'imported') this.balance += cents;
    }
  }

  body() {
    const byOrigin = Object.fromEntries(ORIGINS.map((o) => [o, 0])) as Record<Origin, number>;
    for (const t of this.transactions.values()) byOrigin[t.origin]++;
    return {
      ledger_code: this.code,
      balance: money(this.balance),
      last_statement_balance: money(this.lastStatementBalance),
      last_statement_closing_date: this.closingDate,
      transactions: {
        count: this.transactions.size,
        digest: independentDigest(
          this.code,
          [...this.transactions].map(([id, t]) => ({ id, cents: t.cents })),
        ),
        by_origin: byOrigin,
      },
      billing_documents: this.billingDocuments,
    };
  }
}

/** The ledgers of an account payload as the test expects them right after creation. */
export function ledgersOfPayload(
  payload: {
    ledgers: Array<{
      ledger_code: string;
      ledger_balance: string;
      last_statement_balance: string;
      last_statement_closing_date: string;
      historical_statement_transactions: RawTransaction[];
      current_statement_transactions: RawTransaction[];
    }>;
  },
  taken: Set<string>,
): ExpectedLedger[] {
  return payload.ledgers.map((l) => {
    const ledger = new ExpectedLedger(
      l.ledger_code,
      decimalCents(l.ledger_balance),
      decimalCents(l.last_statement_balance),
      l.last_statement_closing_date,
    );
    ledger.add(l.historical_statement_transactions, 'historical_statement', taken);
    ledger.add(l.current_statement_transactions, 'current_statement', taken);
    return ledger;
  });
}

/** The reconciliation endpoints for one caller. */
export function reconciliationFor(t: TestApp, headers: Record<string, string>) {
  return {
    get: (supplier: string, external: string): Promise<LightMyRequestResponse> =>
      t.app.inject({
        method: 'GET',
        url: `/v2/data-import/accounts/${supplier}/${encodeURIComponent(external)}/reconciliation/`,
        headers,
      }),
    batch: (body: unknown): Promise<LightMyRequestResponse> =>
      t.app.inject({
        method: 'POST',
        url: '/v2/data-import/accounts/reconciliation/',
        headers,
        payload: body as object,
      }),
  };
}

export const AS_OF = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}
