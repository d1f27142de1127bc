import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { until } from '../creation/support.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, readSummary, runClient, startService } from './support.js';

// How `migrate` accounts for its lines against the real service: a line repeated in the file, a key revoked
// mid-run, and options that cannot be a concurrency.
const ORG = 'Lines Org';
const SUPPLIER = 'LINES_SUP';
const TEAM = 'Lines Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-lines' } });
  const tenant = await clientTenant(t, ORG, SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-lines-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const account = (external: string, extra: Record<string, unknown> = {}) => ({
  ...validAccountPayload(),
  import_supplier: SUPPLIER,
  external_account_number: external,
  ...extra,
});

function writeLines(name: string, lines: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
}

const accountsOnService = (prefix: string) =>
  t.app.db.models.Account.find({
    importSupplier: SUPPLIER,
    externalAccountNumber: { $regex: `^${prefix}` },
  }).lean();

describe('migrate', () => {
  it('an account twice in one file: the later line is a duplicate_line of the first, never sent, counted once', async () => {
    const file = writeLines('dup.jsonl', [
      account('DUP-1', { billing_name: 'First line' }),
      account('DUP-2'),
      account('DUP-1', { billing_name: 'Third line' }),
      // The service trims numbers and keys them in NFC: the same account as line 2.
      account(' DUP-2 '),
      account('DUP-3'),
    ]);
    const report = join(dir, 'dup');
    const args = ['migrate', file, '--team', TEAM, '--concurrency', '4', '--report', report, '--quiet'];
    const run = await runClient([...args, '--state', join(dir, 'dup.sqlite')], env);
    // A file that names an account twice needs a look: not a success.
    expect(run.code, run.stderr).toBe(1);
    const byLine = new Map(readResults(report).map((r) => [r.line, r]));
    expect([...byLine.keys()].sort()).toEqual([1, 2, 3, 4, 5]);
    expect([1, 2, 5].map((n) => byLine.get(n)!.outcome)).toEqual(['created', 'created', 'created']);
    expect(byLine.get(3)).toMatchObject({
      outcome: 'duplicate_line',
      external_account_number: 'DUP-1',
      errors: [{ code: 'duplicate_line', attr: 'line:1' }],
      attempts: 0,
    });
    expect(byLine.get(4)).toMatchObject({
      outcome: 'duplicate_line',
      external_account_number: 'DUP-2',
      errors: [{ code: 'duplicate_line', attr: 'line:2' }],
      attempts: 0,
    });
    const summary = readSummary(report);
    expect(summary.by_outcome).toMatchObject({ created: 3, duplicate_line: 2, already_imported: 0 });
    expect(JSON.parse(run.stdout).outcomes).toEqual({ created: 3, duplicate_line: 2 });
    // The service has each account once, made from its first line.
    const accounts = await accountsOnService('DUP-');
    expect(accounts.map((a) => a.externalAccountNumber).sort()).toEqual(['DUP-1', 'DUP-2', 'DUP-3']);
    expect(accounts.find((a) => a.externalAccountNumber === 'DUP-1')!.billingName).toBe('First line');
  });

  it(
    'a key revoked mid-run stops the run (exit 3, one message): the lines after it are not reported as failures',
    { timeout: 120_000 },
    async () => {
      const key = await t.ops.createApiKey(ORG);
      const file = writeLines(
        'revoked.jsonl',
        Array.from({ length: 400 }, (_, i) => account(`REV-${i}`)),
      );
      const report = join(dir, 'revoked');
      const run = await runClient(
        ['migrate', file, '--team', TEAM, '--concurrency', '2', '--report', report, '--quiet'],
        { ...env, IMPORT_API_KEY: key.api_key },
        () => {
          void until(
            async () => (await accountsOnService('REV-')).length >= 10,
            'some accounts',
            60_000,
          ).then(() => t.ops.revokeApiKey(key.id));
        },
      );
      expect(run.code, run.stderr).toBe(3);
      const messages = run.stderr.split('\n').filter((l) => l.startsWith('error:'));
      expect(messages).toHaveLength(1);
      expect(messages[0]).toContain('refused the API key');
      const results = readResults(report);
      expect(results.length).toBeGreaterThanOrEqual(10);
      expect(results.length).toBeLessThan(400);
      // What was created before the revocation is reported so; the lines in flight then are `interrupted`.
      const outcomes = new Set(results.map((r) => r.outcome));
      expect([...outcomes].filter((o) => o !== 'created' && o !== 'interrupted')).toEqual([]);
      const interrupted = results.filter((r) => r.outcome === 'interrupted');
      expect(interrupted.length).toBeGreaterThan(0);
      expect(interrupted.length).toBeLessThanOrEqual(2);
      for (const r of interrupted)
        expect(r.errors).toEqual([{ code: 'api_key_refused', attr: 'non_field_errors' }]);
      const summary = readSummary(report);
      expect(summary.interrupted).toBe(true);
      expect(summary.by_outcome.failed).toBe(0);
      const created = new Set(
        results.filter((r) => r.outcome === 'created').map((r) => r.external_account_number),
      );
      const onService = (await accountsOnService('REV-')).map((a) => a.externalAccountNumber);
      for (const external of created) expect(onService).toContain(external);
    },
  );
});

describe('usage', () => {
  it('--concurrency that is not a positive integer: exit 2, one line, nothing run', async () => {
    const file = writeLines('usage.jsonl', [account('USE-1')]);
    // Each value was taken by that command before (0 and abc ran unbounded, 0x10 and 1e1 as 16 and 10).
    const cases = [
      [['validate', file], '0'],
      [['migrate', file, '--team', TEAM], '0x10'],
      [['post-import', 'notes', file], 'abc'],
      [['reconcile', file], '1e1'],
    ] as const;
    for (const [command, value] of cases) {
      const report = join(dir, `usage-${command[0]}`);
      const run = await runClient([...command, '--concurrency', value, '--report', report], env);
      const what = `${command[0]} --concurrency ${value}`;
      expect(run.code, what).toBe(2);
      expect(run.stderr.trim().split('\n'), what).toHaveLength(1);
      expect(run.stderr, what).toContain('--concurrency');
      expect(existsSync(report), what).toBe(false);
    }
    expect(await accountsOnService('USE-')).toHaveLength(0);
  });
});
