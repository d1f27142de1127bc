import { describe, expect, it } from 'vitest';
import { validateAccount } from '../../src/domain/validation/index.js';
import { realisticAccountPayload, transactionCount } from './fixtures-realistic.js';
import { testContext } from './fixtures.js';

const TODAY = '2026-11-23';

describe('realistic account generator', () => {
  it('gives a valid ~50 KB account with ~200 transactions over two ledgers at 42 months', () => {
    const payload = realisticAccountPayload({ today: TODAY });
    const result = validateAccount(payload, testContext({ today: TODAY }));
    expect(result.ok ? [] : result.errors).toEqual([]);
    expect(payload.ledgers.map((l) => l.ledger_code)).toEqual(['ELECTRICITY', 'GAS']);
    expect(transactionCount(payload)).toBeGreaterThanOrEqual(190);
    expect(transactionCount(payload)).toBeLessThanOrEqual(210);
    const bytes = Buffer.byteLength(JSON.stringify(payload));
    expect(bytes).toBeGreaterThan(40_000);
    expect(bytes).toBeLessThan(60_000);
  });

  it.each([12, 120])('stays valid at %i months and scales its history with them', (months) => {
    const payload = realisticAccountPayload({ today: TODAY, months });
    const result = validateAccount(payload, testContext({ today: TODAY }));
    expect(result.ok ? [] : result.errors).toEqual([]);
    const historical = payload.ledgers[0]!.historical_statement_transactions.length;
    expect(historical).toBeGreaterThanOrEqual(2 * months - 1);
  });

  it('parametrises the number of ledgers and keeps every id unique', () => {
    const payload = realisticAccountPayload({ today: TODAY, ledgers: 3 });
    expect(validateAccount(payload, testContext({ today: TODAY })).ok).toBe(true);
    const ids = payload.ledgers.flatMap((l) =>
      [...l.historical_statement_transactions, ...l.current_statement_transactions].map(
        (t) => t.transaction_id,
      ),
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(payload.ledgers).toHaveLength(3);
  });
});
