import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, readSummary, runClient, startService } from './support.js';

// `reconcile --state` against the real service: a rerun does not read again the accounts that matched with the
// same expected figures, and compares again those whose files changed.
const SUPPLIER = 'RESUME_SUP';
const TEAM = 'Resume Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-reconcile-resume' } });
  const tenant = await clientTenant(t, 'Resume Org', SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-reconcile-resume-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const TYPE = 'CHARGE';
const account = (i: number) => ({
  ...validAccountPayload(),
  import_supplier: SUPPLIER,
  external_account_number: `RR-${i}`,
});

describe('reconcile --state', () => {
  it('skips what matched with the same figures, compares again what the files changed', async () => {
    const cohort = join(dir, 'cohort.jsonl');
    writeFileSync(cohort, [0, 1, 2, 3].map((i) => JSON.stringify(account(i))).join('\n') + '\n');
    const migrated = await runClient(
      ['migrate', cohort, '--team', TEAM, '--report', join(dir, 'm'), '--quiet'],
      env,
    );
    expect(migrated.code, migrated.stderr).toBe(0);
    const state = join(dir, 'reconcile.sqlite');
    const reconcile = (report: string, extra: string[] = []) =>
      runClient(
        ['reconcile', cohort, '--state', state, '--report', join(dir, report), '--quiet', ...extra],
        env,
      );

    const first = await reconcile('r1');
    expect(first.code, first.stderr).toBe(0);
    expect(readSummary(join(dir, 'r1')).by_outcome).toMatchObject({ matched: 4 });

    const second = await reconcile('r2');
    expect(second.code, second.stderr).toBe(0);
    const again = readResults(join(dir, 'r2'));
    expect(again.map((r) => [r.outcome, r.done_earlier])).toEqual(Array(4).fill(['matched', true]));
    expect(readSummary(join(dir, 'r2'))).toMatchObject({ sent: 0, runs: [{}, {}] });

    // A transactions file (never sent) changes what RR-1 should hold (on its first ledger): it is compared
    // again, and differs.
    const transactions = join(dir, 'tx.jsonl');
    writeFileSync(
      transactions,
      JSON.stringify({
        import_supplier: SUPPLIER,
        external_account_number: 'RR-1',
        transactions: [
          { transaction_id: 'RR-1-T1', transaction_date: '2025-01-15', amount: '1.00', type: TYPE },
        ],
      }) + '\n',
    );
    const third = await reconcile('r3', ['--transactions', transactions]);
    expect(third.code, third.stderr).toBe(1);
    const got = new Map(readResults(join(dir, 'r3')).map((r) => [r.external_account_number, r]));
    expect(got.get('RR-1')).toMatchObject({ outcome: 'mismatched' });
    expect(got.get('RR-1')!.done_earlier).toBeUndefined();
    for (const ext of ['RR-0', 'RR-2', 'RR-3']) expect(got.get(ext)).toMatchObject({ done_earlier: true });
  });
});
