import { Decimal } from 'decimal.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decimal, money } from '../../src/schemas/primitives.js';

// JSON numbers take a fast path that never formats them as strings; it must answer exactly as the same
// value written as its shortest decimal string does.

const schemas = {
  money: money(),
  'money, non-negative': money({ nonNegative: true }),
  decimal: decimal(),
  'decimal, non-negative': decimal({ nonNegative: true }),
};

/** What the number path must agree with: the shortest round-trip text, without exponent. */
const plainText = (v: number): string => {
  const s = String(v);
  return s.includes('e') ? new Decimal(v).toFixed() : s;
};

function outcome(schema: z.ZodType, input: unknown) {
  const parsed = z.compile(schema).safeParse(input);
  if (parsed.success) return { data: parsed.data as unknown };
  return { issues: parsed.error.issues.map((i) => [i.message, (i as { params?: unknown }).params]) };
}

// Doubles near the values the fast path must get right: cents, short fractions, 15-digit edges.
const scaledInteger = fc
  .tuple(
    fc.oneof(
      fc.integer({ min: -1_000_000, max: 1_000_000 }),
      fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n }),
    ),
    fc.integer({ min: 0, max: 12 }),
  )
  .map(([units, places]) => Number(units) / 10 ** places);

describe('decimal normalisation', () => {
  it.each(Object.entries(schemas))('%s: a number answers as its shortest decimal string', (_name, schema) => {
    const agree = (v: number): void => {
      expect(outcome(schema, v)).toEqual(outcome(schema, plainText(v)));
    };
    for (const v of [0, -0, 0.1 + 0.2, 1.005, 1e-7, 1e15, 1e15 - 1, 99999999999999.9, 1e21, -12.3, 4.35])
      agree(v);
    fc.assert(
      fc.property(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), scaledInteger), agree),
      {
        numRuns: 3000,
      },
    );
  });

  it('canonical strings come back as given; others in their canonical form', () => {
    const parse = (schema: z.ZodType, v: unknown) => z.compile(schema).parse(v);
    expect(['10.50', '-0.50', '0.05', '-3.00'].map((v) => parse(money(), v))).toEqual([
      '10.50',
      '-0.50',
      '0.05',
      '-3.00',
    ]);
    expect(['007.50', '-0.00', '5', '5.5'].map((v) => parse(money(), v))).toEqual([
      '7.50',
      '0.00',
      '5.00',
      '5.50',
    ]);
    expect(['0.1234', '1.2300', '-0', '00', '-000.010'].map((v) => parse(decimal(), v))).toEqual([
      '0.1234',
      '1.23',
      '0',
      '0',
      '-0.01',
    ]);
    expect([0.1, 12, -0, 1e-7, 4.6, 123456789012345].map((v) => parse(decimal(), v))).toEqual([
      '0.1',
      '12',
      '0',
      '0.0000001',
      '4.6',
      '123456789012345',
    ]);
  });
});
