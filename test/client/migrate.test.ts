import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { until } from '../creation/support.js';
import { clientTenant, runClient, startService } from './support.js';

// The migration client against the real service (web + worker processes) over real HTTP.
const SUPPLIER = 'CLIENT_SUP';
const TEAM = 'Client Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client' } });
  const tenant = await clientTenant(t, 'Client Org', SUPPLIER, TEAM);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Line = {
  line: number;
  outcome: string;
  external_account_number: string | null;
  kraken_account_number: string | null;
  errors: { code: string; attr: string }[];
  attempts: number;
  done_earlier?: true;
};
const results = (report: string) =>
  readFileSync(join(report, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Line);

function writeLines(name: string, lines: string[]): string {
  const path = join(dir, name);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const account = (external: string, realistic = false) => ({
  ...(realistic ? realisticAccountPayload() : validAccountPayload()),
  import_supplier: SUPPLIER,
  external_account_number: external,
});

async function imported(): Promise<{ external_account_number: string; kraken_account_number: string }[]> {
  const created = await t.app.db.models.AccountImportProcess.find({
    importSupplier: SUPPLIER,
    krakenAccountNumber: { $ne: null },
  }).lean();
  return created.map((p) => ({
    external_account_number: p.externalAccountNumber,
    kraken_account_number: p.krakenAccountNumber!,
  }));
}

describe('migrate', () => {
  it(
    '1,000 realistic lines with invalid ones and a malformed one: every line reported with its outcome and paths',
    { timeout: 240_000 },
    async () => {
      const lines: string[] = [];
      const expected = new Map<number, { outcome: string; attr?: string }>();
      for (let i = 1; i <= 1_000; i++) {
        if (i === 500) {
          lines.push('{"import_supplier": "CLIENT_SUP", "external_account_number": ');
          expected.set(i, { outcome: 'parse_error' });
        } else if (i % 100 === 7) {
          lines.push(JSON.stringify({ ...account(`BIG-${i}`, true), billing_postcode: '1' }));
          expected.set(i, { outcome: 'validation_failed', attr: 'billing_postcode' });
        } else if (i % 100 === 13) {
          const { customers: _c, ...rest } = account(`BIG-${i}`, true);
          lines.push(JSON.stringify(rest));
          expected.set(i, { outcome: 'validation_failed', attr: 'customers' });
        } else {
          lines.push(JSON.stringify(account(`BIG-${i}`, true)));
          expected.set(i, { outcome: 'created' });
        }
      }
      const file = writeLines('big.jsonl', lines);
      const report = join(dir, 'report-big');
      const run = await runClient(
        [
          'migrate',
          file,
          '--team',
          TEAM,
          '--concurrency',
          '16',
          '--report',
          report,
          '--state',
          join(dir, 'big.sqlite'),
        ],
        env,
      );
      expect(run.code, run.stderr).toBe(1);
      const got = results(report);
      expect(got).toHaveLength(1_000);
      for (const r of got) {
        const want = expected.get(r.line)!;
        expect(r.outcome, `line ${r.line}`).toBe(want.outcome);
        if (want.attr)
          expect(
            r.errors.map((e) => e.attr),
            `line ${r.line}`,
          ).toContain(want.attr);
        if (want.outcome === 'created') expect(r.kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
        if (want.outcome === 'parse_error')
          expect(r.errors).toEqual([{ code: 'parse_error', attr: 'non_field_errors' }]);
      }
      // The service agrees: exactly the created lines, with the same numbers.
      const server = new Map(
        (await imported()).map((a) => [a.external_account_number, a.kraken_account_number]),
      );
      const created = got.filter((r) => r.outcome === 'created');
      expect(server.size).toBe(created.length);
      for (const r of created) expect(server.get(r.external_account_number!)).toBe(r.kraken_account_number);
      const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8'));
      expect(summary.by_outcome).toMatchObject({
        created: created.length,
        validation_failed: 20,
        parse_error: 1,
      });
      expect(summary.by_error_code.invalid_postcode).toBeGreaterThan(0);
      const csv = readFileSync(join(report, 'results.csv'), 'utf8').trim().split('\n');
      expect(csv[0]).toBe(
        'line,import_supplier,external_account_number,outcome,http_status,kraken_account_number,errors,attempts,ms,done_earlier',
      );
      expect(csv).toHaveLength(1_001);
    },
  );

  it(
    'Ctrl-C stops, saves state and report (exit 130); SIGKILL mid-run; each rerun converges, every account created once',
    { timeout: 240_000 },
    async () => {
      const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify(account(`RES-${i}`)));
      const file = writeLines('resume.jsonl', lines);
      const state = join(dir, 'resume.sqlite');
      const args = (report: string) => [
        'migrate',
        file,
        '--team',
        TEAM,
        '--concurrency',
        '4',
        '--report',
        join(dir, report),
        '--state',
        state,
      ];
      const createdSoFar = async () =>
        (await imported()).filter((a) => a.external_account_number.startsWith('RES-')).length;

      const interrupted = await runClient(args('r1'), env, (proc) => {
        void until(async () => (await createdSoFar()) >= 30, 'some accounts', 60_000).then(() =>
          proc.kill('SIGINT'),
        );
      });
      expect(interrupted.code, interrupted.stderr).toBe(130);
      const first = JSON.parse(readFileSync(join(dir, 'r1', 'summary.json'), 'utf8'));
      expect(first.interrupted).toBe(true);
      expect(first.lines).toBeLessThan(300);
      expect(results(join(dir, 'r1')).length).toBe(first.lines);

      const killed = await runClient(args('r2'), env, (proc) => {
        const before = createdSoFar();
        void before
          .then((n) => until(async () => (await createdSoFar()) >= n + 30, 'more accounts', 60_000))
          .then(() => proc.kill('SIGKILL'));
      });
      expect(killed.signal).toBe('SIGKILL');

      const rerun = await runClient(args('r3'), env);
      expect(rerun.code, rerun.stderr).toBe(0);
      const final = results(join(dir, 'r3'));
      expect(final).toHaveLength(300);
      expect(final.every((r) => r.outcome === 'created' || r.outcome === 'already_imported')).toBe(true);
      // Accounts finished by earlier runs are skipped (no request), the rest sent.
      const skipped = final.filter((r) => r.done_earlier);
      expect(skipped.length).toBeGreaterThan(30);
      expect(skipped.every((r) => r.attempts === 0)).toBe(true);
      // The report of the last run (in its own folder) has the three runs, from the state they share.
      const summary = JSON.parse(readFileSync(join(dir, 'r3', 'summary.json'), 'utf8'));
      expect(summary.runs.map((r: { ended: string }) => r.ended)).toEqual([
        'interrupted',
        'unfinished',
        'completed',
      ]);
      expect(summary.runs[0]).toMatchObject({ run: 1, lines: first.lines, sent: first.lines });
      expect(summary.runs[1].finished_at).toBeNull();
      expect(summary).toMatchObject({
        run: 3,
        lines: 300,
        skipped_done_earlier: skipped.length,
        sent: 300 - skipped.length,
      });
      expect(summary.by_outcome.created + summary.by_outcome.already_imported).toBe(300 - skipped.length);
      const accounts = await t.app.db.models.Account.find({
        importSupplier: SUPPLIER,
        externalAccountNumber: { $regex: '^RES-' },
      }).lean();
      expect(accounts).toHaveLength(300);
      expect(new Set(accounts.map((a) => a.externalAccountNumber)).size).toBe(300);
      const numbers = new Map(final.map((r) => [r.external_account_number, r.kraken_account_number]));
      for (const a of accounts) expect(numbers.get(a.externalAccountNumber)).toBe(a.number);
    },
  );

  it(
    'a resumed run: the report keeps the first run, counts skipped lines apart, rates only what it sent',
    { timeout: 120_000 },
    async () => {
      const lines = Array.from({ length: 24 }, (_, i) => JSON.stringify(account(`HIS-${i}`)));
      const half = writeLines('history-half.jsonl', lines.slice(0, 12));
      const full = writeLines('history-full.jsonl', lines);
      const report = join(dir, 'report-history');
      const state = join(dir, 'history.sqlite');
      const migrate = (file: string) =>
        runClient(
          [
            'migrate',
            file,
            '--team',
            TEAM,
            '--mode',
            'v1',
            '--concurrency',
            '3',
            '--report',
            report,
            '--state',
            state,
            '--quiet',
          ],
          env,
        );
      const first = await migrate(half);
      expect(first.code, first.stderr).toBe(0);
      const second = await migrate(full);
      expect(second.code, second.stderr).toBe(0);
      // stdout: this run and where it stands among the runs.
      expect(JSON.parse(second.stdout)).toMatchObject({
        run: 2,
        runs: 2,
        lines: 24,
        skipped_done_earlier: 12,
        sent: 12,
        outcomes: { created: 12 },
      });

      const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8'));
      expect(summary.runs).toHaveLength(2);
      expect(summary.runs[0]).toMatchObject({
        run: 1,
        ended: 'completed',
        lines: 12,
        skipped_done_earlier: 0,
        sent: 12,
        by_outcome: { created: 12 },
      });
      // The 12 lines done in the first run are skipped, never counted as this run's successes.
      expect(summary).toMatchObject({
        run: 2,
        lines: 24,
        skipped_done_earlier: 12,
        sent: 12,
        by_outcome: { created: 12, already_imported: 0 },
      });
      expect(summary.runs[1]).toMatchObject({
        run: 2,
        ended: 'completed',
        skipped_done_earlier: 12,
        sent: 12,
      });
      // The rate is over the 12 lines sent (counting the skipped ones would double it).
      expect(summary.seconds).toBeGreaterThan(0);
      expect(Math.abs(summary.accounts_per_s - 12 / summary.seconds)).toBeLessThanOrEqual(0.05);
      // Totals over both runs: every input line sent once and created once; time and CPU of both runs.
      expect(summary.total).toMatchObject({ runs: 2, sent: 24, started_at: summary.runs[0].started_at });
      expect(summary.total.by_outcome.created).toBe(24);
      expect(summary.total.seconds).toBeCloseTo(summary.runs[0].seconds + summary.runs[1].seconds, 2);
      expect(summary.total.cpu_seconds).toBeGreaterThan(summary.cpu_seconds);
      expect(Math.abs(summary.total.accounts_per_s - 24 / summary.total.seconds)).toBeLessThanOrEqual(0.05);

      // The whole command line, secrets left out; the options in effect.
      expect(summary.command).toBe(
        `import-client migrate ${full} --team 'Client Team' --mode v1 --concurrency 3 --report ${report} --state ${state} --quiet`,
      );
      expect(summary.runs[0].command).toContain(half);
      expect(JSON.stringify(summary)).not.toContain(env.IMPORT_API_KEY);
      expect(JSON.stringify(summary)).not.toMatch(/eyJ[\w-]*\./);
      expect(summary.options).toMatchObject({
        team: TEAM,
        mode: 'v1',
        dry_run: false,
        concurrency: 3,
        poll_timeout: 1800,
        report,
        state,
      });

      // Every line is in this run's results; the skipped ones say so.
      const got = results(report);
      expect(got).toHaveLength(24);
      expect(
        got
          .filter((r) => r.done_earlier)
          .map((r) => r.line)
          .sort((a, b) => a - b),
      ).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
      // The first run's report was kept beside it, not written over.
      const earlier = readdirSync(join(report, 'earlier'));
      expect(earlier).toHaveLength(1);
      expect(
        JSON.parse(readFileSync(join(report, 'earlier', earlier[0]!, 'summary.json'), 'utf8')),
      ).toMatchObject({ run: 1, lines: 12, sent: 12 });
      expect(results(join(report, 'earlier', earlier[0]!))).toHaveLength(12);
      expect((await imported()).filter((a) => a.external_account_number.startsWith('HIS-'))).toHaveLength(24);
    },
  );

  it('--mode v2 schedules and follows each account until it is created', { timeout: 120_000 }, async () => {
    // One number with spaces around it: the service trims it, and the client follows the trimmed account.
    const file = writeLines('v2.jsonl', [
      ...Array.from({ length: 19 }, (_, i) => JSON.stringify(account(`V2C-${i}`))),
      JSON.stringify(account('  V2C-19 ')),
    ]);
    const report = join(dir, 'report-v2');
    const run = await runClient(
      [
        'migrate',
        file,
        '--mode',
        'v2',
        '--team',
        TEAM,
        '--report',
        report,
        '--state',
        join(dir, 'v2.sqlite'),
      ],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    const got = results(report);
    expect(got.every((r) => r.outcome === 'created' && /^A-/.test(r.kraken_account_number ?? ''))).toBe(true);
    expect((await imported()).filter((a) => a.external_account_number.startsWith('V2C-'))).toHaveLength(20);
  });
});

describe('validate', () => {
  it('--offline gives the same codes and paths as the server', { timeout: 60_000 }, async () => {
    const broken = [
      { ...account('OFF-1'), billing_postcode: '1' },
      { ...account('OFF-2'), customers: [] },
      { ...account('OFF-3'), account_type: 'NOPE', surprise: true },
      { ...account('OFF-4'), customers: [{ account_roles: ['ACCOUNT_HOLDER'], email: 'x', mobile: '123' }] },
      { ...account('OFF-5'), ledgers: [{ ledger_code: 'E', last_statement_balance: 'abc' }] },
      account('OFF-6'),
      { ...account('OFF-7'), metadata: [{ key: 'k', value: { constructor: { prototype: { x: 1 } } } }] },
    ];
    // And a line the service's JSON parser refuses (prototype poisoning), written by hand.
    const poisoned = JSON.stringify(account('OFF-8')).replace('{', '{"__proto__": {"x": 1}, ');
    const file = writeLines('broken.jsonl', [...broken.map((b) => JSON.stringify(b)), poisoned]);
    const online = await runClient(['validate', file, '--report', join(dir, 'v-on')], env);
    const offline = await runClient(['validate', file, '--offline', '--report', join(dir, 'v-off')], {});
    expect(online.code).toBe(1);
    expect(offline.code).toBe(1);
    const byLine = (report: string) =>
      new Map(results(report).map((r) => [r.line, { outcome: r.outcome, errors: r.errors }]));
    const on = byLine(join(dir, 'v-on'));
    const off = byLine(join(dir, 'v-off'));
    expect(off).toEqual(on);
    expect(on.get(6)).toEqual({ outcome: 'dry_run_ok', errors: [] });
    expect(on.get(7)!.outcome).toBe('parse_error');
    expect(on.get(8)).toEqual({
      outcome: 'parse_error',
      errors: [{ code: 'parse_error', attr: 'non_field_errors' }],
    });
    expect(on.get(1)!.errors).toContainEqual({ code: 'invalid_postcode', attr: 'billing_postcode' });
  });
});

describe('usage', () => {
  it('exit 2 without a key, without --team in v1, or for an unknown command', async () => {
    const file = writeLines('one.jsonl', [JSON.stringify(account('U-1'))]);
    expect((await runClient(['migrate', file, '--team', TEAM], {})).code).toBe(2);
    expect((await runClient(['migrate', file], env)).code).toBe(2);
    expect((await runClient(['nonsense'], env)).code).toBe(2);
  });

  it(
    'post-import sends each line to its endpoint; status counts the supplier',
    { timeout: 60_000 },
    async () => {
      // Its own account first (the test stands alone).
      const one = writeLines('pi-account.jsonl', [JSON.stringify(account('PI-1'))]);
      const migrated = await runClient(
        [
          'migrate',
          one,
          '--team',
          TEAM,
          '--quiet',
          '--report',
          join(dir, 'pi-m'),
          '--state',
          join(dir, 'pi.sqlite'),
        ],
        env,
      );
      expect(migrated.code, migrated.stderr).toBe(0);
      const notes = writeLines('notes.jsonl', [
        JSON.stringify({
          import_supplier: SUPPLIER,
          external_account_number: 'PI-1',
          notes: [{ body: 'Hola', created_at: '2025-01-01T10:00:00Z' }],
        }),
        JSON.stringify({
          import_supplier: SUPPLIER,
          external_account_number: 'NOT-THERE',
          notes: [{ body: 'x' }],
        }),
      ]);
      const run = await runClient(['post-import', 'notes', notes, '--report', join(dir, 'pi')], env);
      expect(run.code).toBe(1);
      expect(
        results(join(dir, 'pi'))
          .map((r) => r.outcome)
          .sort(),
      ).toEqual(['created', 'failed']);
      const status = await runClient(['status', '--supplier', SUPPLIER], env);
      expect(status.code, status.stderr).toBe(0);
      // The cohort's progress, in one request: the counts the service keeps.
      const progress = JSON.parse(status.stdout);
      expect(progress).toMatchObject({ import_supplier_code: SUPPLIER, status: 'Ongoing' });
      expect(progress.accounts.PROCESSED).toBe((await imported()).length);
      expect(progress.accounts.IN_PROGRESS).toBe(0);
      expect(progress.post_import.notes).toBe(1);
    },
  );
});
