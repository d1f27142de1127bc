import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedAccount, startPostImportEnv, type PostImportEnv } from '../post-import/fixtures.js';
import { independentDigest, money, reconciliationFor, signedCents, type RawTransaction } from './support.js';

// Property: whatever transactions an account receives (ids of any script, any type and amount, several
// requests, repeats among them, dates inside and before the open period), the digest, count and balance the
// service answers equal what the test computes itself from what it sent.

let env: PostImportEnv;

beforeAll(async () => {
  env = await startPostImportEnv('recondigest');
});
afterAll(async () => env?.close());

const TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT'] as const;
const EXTRA: Record<(typeof TYPES)[number], Record<string, string>> = {
  CHARGE: { reason: 'IMPORTED_CHARGE' },
  CREDIT: { reason: 'GENERAL_CREDIT' },
  PAYMENT: { payment_type: 'DIRECT_CREDIT' },
  REPAYMENT: { payment_type: 'DIRECT_CREDIT' },
};

const idArb = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 24 })
  // As the schema keeps them: trimmed, and no control characters (refused as invalid_character).
  .filter((s) => s.trim() === s && ![...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f));
const transactionArb = fc.record({
  id: idArb,
  type: fc.constantFrom(...TYPES),
  cents: fc.integer({ min: 0, max: 99_999_999 }),
  asNumber: fc.boolean(),
  // Days after 2025-05-20: before the seeded ledger's open period (2025-06-01) for the first eleven.
  day: fc.integer({ min: 0, max: 30 }),
});
type Generated = { id: string; type: (typeof TYPES)[number]; cents: number; asNumber: boolean; day: number };

function raw(t: Generated): RawTransaction {
  const amount = `${Math.floor(t.cents / 100)}.${String(t.cents % 100).padStart(2, '0')}`;
  const date = new Date(Date.UTC(2025, 4, 20 + t.day)).toISOString().slice(0, 10);
  return {
    transaction_id: t.id,
    transaction_date: date,
    amount: t.asNumber && t.cents % 100 !== 0 ? Number(amount) : amount,
    type: t.type,
    ...EXTRA[t.type],
  };
}

let accounts = 0;

describe('the digest the service keeps', () => {
  it('equals an independent computation over generated imports', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Requests of unique ids each; ids may repeat across requests (a repeat is not stored again).
        fc.array(fc.uniqueArray(transactionArb, { selector: (t) => t.id, minLength: 1, maxLength: 40 }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (requests) => {
          const external = `DIGEST-${++accounts}`;
          await seedAccount(env, external);
          const stored = new Map<string, bigint>();
          for (const batch of requests) {
            const res = await env.post('transactions/create/', {
              import_supplier: env.supplier,
              external_account_number: external,
              transactions: batch.map(raw),
            });
            expect(res.statusCode, res.body).toBe(201);
            for (const t of batch) {
              const r = raw(t);
              if (!stored.has(t.id)) stored.set(t.id, signedCents(r.type, r.amount));
            }
          }
          const res = await reconciliationFor(env.t, env.headers).get(env.supplier, external);
          const ledger = res.json().ledgers[0];
          const balance = [...stored.values()].reduce((sum, c) => sum + c, -1500n);
          expect(ledger.transactions.count).toBe(stored.size);
          expect(ledger.transactions.by_origin.imported).toBe(stored.size);
          expect(ledger.balance).toBe(money(balance));
          expect(ledger.transactions.digest).toBe(
            independentDigest(
              'ELECTRICITY',
              [...stored].map(([id, cents]) => ({ id, cents })),
            ),
          );
        },
      ),
      { numRuns: 25 },
    );
  });
});
