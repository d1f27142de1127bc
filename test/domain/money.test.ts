import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  formatCents,
  matchesToTheCent,
  MONEY_LIMIT_CENTS,
  MONEY_LIMIT_TEXT,
  signedMinor,
  signedTotal,
  toCents,
  toMinor,
} from '../../src/vocabulary/money.js';
import { validateAccount, validateStatementsImport } from '../../src/domain/validation/index.js';
import { cents, money } from '../../src/schemas/primitives.js';
import { POST_IMPORT_LIMITS } from '../../src/schemas/post-import.js';
import { testContext, validAccountPayload } from './fixtures.js';
import { validStatementsImport } from './fixtures-post-import.js';
import { setAt } from './json-path.js';

const ctx = testContext();

function gasLedgerWithTenDimes(ledgerBalance: number | string) {
  const payload = validAccountPayload();
  const payments = Array.from({ length: 10 }, (_, i) => ({
    transaction_id: `DIME-${i}`,
    transaction_date: `2025-03-${String(i + 10)}`,
    amount: 0.1,
    type: 'PAYMENT',
    payment_type: 'CASH',
  }));
  setAt(payload, 'ledgers.1.current_statement_transactions', payments);
  setAt(payload, 'ledgers.1.ledger_balance', ledgerBalance);
  return payload;
}

describe('exact money', () => {
  it('ten 0.1 payments balance 1.0 exactly (binary floats would not)', () => {
    expect(
      Array(10)
        .fill(0.1)
        .reduce((a: number, b: number) => a + b, 0),
    ).not.toBe(1);
    expect(validateAccount(gasLedgerWithTenDimes(1.0), ctx)).toMatchObject({ ok: true });
    expect(validateAccount(gasLedgerWithTenDimes('1.00'), ctx)).toMatchObject({ ok: true });
  });

  it('one cent off is reported on ledger_balance', () => {
    const result = validateAccount(gasLedgerWithTenDimes(1.01), ctx);
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          code: 'balance_mismatch_on_ledger_balance',
          attr: 'ledgers.1.ledger_balance',
          detail: 'last_statement_balance plus current statement transactions is 1.00, not 1.01.',
        },
      ],
    });
  });

  it('PAYMENT and CREDIT add; CHARGE, REPAYMENT and SUPPLY_CHARGE subtract', () => {
    const t = (type: 'CHARGE' | 'CREDIT' | 'PAYMENT' | 'REPAYMENT' | 'SUPPLY_CHARGE') => [
      { type, amount: '1.00' },
    ];
    expect(['PAYMENT', 'CREDIT'].map((x) => formatCents(signedTotal(t(x as 'PAYMENT'))))).toEqual([
      '1.00',
      '1.00',
    ]);
    expect(
      ['CHARGE', 'REPAYMENT', 'SUPPLY_CHARGE'].map((x) => formatCents(signedTotal(t(x as 'CHARGE')))),
    ).toEqual(['-1.00', '-1.00', '-1.00']);
  });

  it('products are compared to the cent, accepting either rounding of a half cent', () => {
    expect(matchesToTheCent('10.35', '49.30', '0.21')).toBe(true); // 10.353
    expect(matchesToTheCent('1.00', '1.005', '1')).toBe(true);
    expect(matchesToTheCent('1.01', '1.005', '1')).toBe(true);
    expect(matchesToTheCent('1.00', '1.0051', '1')).toBe(false);
  });

  it('works in exact integer minor units, whatever the magnitude or number of places', () => {
    expect(toCents('-12.00')).toBe(-1200n);
    expect(toCents('999999999999999.99')).toBe(99999999999999999n);
    expect(formatCents(5n)).toBe('0.05');
    const big = { type: 'PAYMENT' as const, amount: '999999999999999.99' };
    expect(signedTotal([big, big, { type: 'CHARGE', amount: '0.01' }])).toBe(199999999999999997n);
    expect(formatCents(-99999999999999999n)).toBe('-999999999999999.99');
    // 10-place factors: the product has 20 places (and more significant digits than decimal.js keeps).
    expect(matchesToTheCent('0.00', '0.0000000001', '49.9999999999')).toBe(true);
    expect(matchesToTheCent('123456789012.47', '1234567890.1234567891', '100.0000000001')).toBe(true);
    expect(matchesToTheCent('123456789012.46', '1234567890.1234567891', '100.0000000001')).toBe(false);
    expect(matchesToTheCent('0.01', '0.005', '1')).toBe(true);
    expect(matchesToTheCent('0.01', '0.0049999999', '1')).toBe(false);
  });

  it('agrees with arbitrary-precision decimal arithmetic on random amounts', () => {
    const Exact = Decimal.clone({ precision: 100 });
    const decimalArb = (maxInt: number, places: number) =>
      fc
        .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** BigInt(maxInt + places) - 1n }))
        .map(([neg, n]) =>
          new Exact(n.toString())
            .div(10 ** places)
            .times(neg ? -1 : 1)
            .toFixed(),
        );
    fc.assert(
      fc.property(
        decimalArb(15, 2),
        fc.integer({ min: 0, max: 10 }).chain((p) => decimalArb(15 - p, p)),
        fc.integer({ min: 0, max: 10 }).chain((p) => decimalArb(8, p)),
        fc.boolean(),
        (stated, a, b, near) => {
          const s = near ? new Exact(a).times(b).toDecimalPlaces(2).toFixed(2) : stated;
          const exact = new Exact(a).times(b).minus(s).abs().lte('0.005');
          expect(matchesToTheCent(s, a, b)).toBe(exact);
          expect(toCents(s)).toBe(BigInt(new Exact(s).times(100).toFixed()));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('normalises amounts to exact decimal strings, money with two places', () => {
    const result = validateAccount(validAccountPayload(), ctx);
    if (!result.ok) throw new Error('fixture should validate');
    const supplyCharge = result.data.ledgers?.[0]?.historical_statement_transactions?.[0];
    expect(supplyCharge?.amount).toBe('59.65');
    expect(supplyCharge?.line_items?.map((l) => [l.net_amount, l.price_per_unit, l.number_of_units])).toEqual(
      [
        ['15.00', '0.15', '100'],
        ['25.00', '0.125', '200'],
        ['9.30', '0.3', '31'],
      ],
    );
    expect(result.data.ledgers?.[0]?.last_statement_balance).toBe('-12.00');
  });
});

describe('signedMinor', () => {
  it('is the exact signed amount in cents for every type, up to the money bound (compared with decimal.js)', () => {
    const types = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
    fc.assert(
      fc.property(
        fc.constantFrom(...types),
        fc.bigInt({ min: 0n, max: BigInt(MONEY_LIMIT_CENTS) }),
        fc.constantFrom(0, 1, 2),
        (type, units, places) => {
          const text =
            places === 0
              ? units.toString()
              : new Decimal(units.toString()).dividedBy(10 ** places).toFixed(places);
          const sign = type === 'PAYMENT' || type === 'CREDIT' ? 1 : -1;
          const expected = new Decimal(text).times(100).times(sign).toNumber();
          expect(signedMinor(type, text)).toBe(expected === 0 ? 0 * sign : expected);
        },
      ),
    );
  });
});

/** The one field error a money schema gives, or its normalised value. */
function moneyOutcome(schema: z.ZodType, input: unknown): string {
  const parsed = z.compile(schema).safeParse(input);
  if (parsed.success) return parsed.data as string;
  const codes = parsed.error.issues.map((i) => (i as { params?: { code?: string } }).params?.code ?? i.code);
  return codes.join(',');
}

describe('the money bound (9,999,999,999.99 either side of zero)', () => {
  it('accepts the largest magnitude and refuses the smallest beyond it: numbers or strings, either sign, any zeros', () => {
    const accepted = [
      '9999999999.99',
      9999999999.99,
      '000009999999999.99',
      '9999999999.9900000000',
      '-9999999999.99',
      -9999999999.99,
    ];
    expect(accepted.map((v) => moneyOutcome(money(), v))).toEqual([
      '9999999999.99',
      '9999999999.99',
      '9999999999.99',
      '9999999999.99',
      '-9999999999.99',
      '-9999999999.99',
    ]);
    expect(moneyOutcome(money({ nonNegative: true }), 9999999999.99)).toBe('9999999999.99');
    const refused = [
      '10000000000.00',
      10_000_000_000,
      '10000000000.0000000000',
      '-10000000000',
      -10_000_000_000,
      '-10000000000.01',
      '90071992547409.93', // 2^53 + 1 cents: a JS number of cents would hold 2^53
      JSON.parse('90071992547409.93') as number, // as a JSON number arrives
      '999999999999999.99',
    ];
    for (const v of refused) expect(moneyOutcome(money(), v), String(v)).toBe('amount_out_of_range');
    // Decimal places and sign are checked first: a fraction of a cent is never rounded into the bound.
    expect(moneyOutcome(money(), '9999999999.999')).toBe('too_many_decimal_places');
    expect(moneyOutcome(money(), '10000000000.001')).toBe('too_many_decimal_places');
    expect(moneyOutcome(money({ nonNegative: true }), '-10000000000.00')).toBe('negative_amount');
    // Beyond 15 integer digits the text is not a decimal the service reads at all.
    expect(moneyOutcome(money(), '1000000000000000.00')).toBe('invalid_decimal');
  });

  it('bounds amounts in cents the same way (999,999,999,999)', () => {
    const outcomes = [999_999_999_999, -999_999_999_999, 1e12, -1e12, 2 ** 53, 12.5].map((v) => {
      const parsed = z.compile(cents()).safeParse(v);
      return parsed.success
        ? parsed.data
        : parsed.error.issues.map((i) => (i as { params?: { code?: string } }).params?.code ?? i.code).join();
    });
    expect(outcomes).toEqual([
      999_999_999_999,
      -999_999_999_999,
      'amount_out_of_range',
      'amount_out_of_range',
      'amount_out_of_range',
      'invalid_type',
    ]);
  });

  it('answers a ledger balance beyond it at its exact path, in the documented field error', () => {
    const payload = validAccountPayload();
    setAt(payload, 'ledgers.1.current_statement_transactions.0.amount', '90071992547409.93');
    setAt(payload, 'ledgers.1.ledger_balance', '-90071992547409.93');
    expect(validateAccount(payload, ctx)).toEqual({
      ok: false,
      errors: [
        {
          code: 'amount_out_of_range',
          attr: 'ledgers.1.current_statement_transactions.0.amount',
          detail: `Money amounts are at most ${MONEY_LIMIT_TEXT} either side of zero: a larger one cannot be held exactly.`,
        },
        {
          code: 'amount_out_of_range',
          attr: 'ledgers.1.ledger_balance',
          detail: `Money amounts are at most ${MONEY_LIMIT_TEXT} either side of zero: a larger one cannot be held exactly.`,
        },
      ],
    });
  });

  it("refuses a historical statement's gross_amount beyond it", () => {
    const body = validStatementsImport();
    setAt(body, 'statements.0.gross_amount', 1e12);
    expect(validateStatementsImport(body, ctx)).toMatchObject({
      ok: false,
      errors: [{ code: 'amount_out_of_range', attr: 'statements.0.gross_amount' }],
    });
  });

  it('holds every amount exactly; toMinor throws rather than round a number of cents beyond 2^53', () => {
    // The bound's arithmetic (docs/api.md): a balance plus an amount, and a whole import, stay far below 2^53.
    expect(formatCents(BigInt(MONEY_LIMIT_CENTS))).toBe(MONEY_LIMIT_TEXT.replaceAll(',', ''));
    expect(2 * MONEY_LIMIT_CENTS).toBeLessThan(Number.MAX_SAFE_INTEGER);
    expect(POST_IMPORT_LIMITS.transactions * MONEY_LIMIT_CENTS).toBeLessThan(Number.MAX_SAFE_INTEGER / 9);
    expect(toMinor('9999999999.99')).toBe(999_999_999_999);
    expect(toMinor('-9999999999.99')).toBe(-999_999_999_999);
    expect(() => toMinor('90071992547409.93')).toThrow(RangeError);
    expect(() => signedMinor('CHARGE', '999999999999999.99')).toThrow(RangeError);
  });
});
