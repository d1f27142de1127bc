import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { until } from '../creation/support.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import { readResults, runClient, startService, type ClientRun } from './support.js';

// `migrate` declares the supplier's cohort plan from its file before it sends an account, holds a paused
// cohort's accounts (not failed) until it is resumed, and `status` prints the plan: the client as a process
// against the real service (web + worker).
const ORG = 'Plan Client Org';
const TEAM = 'Plan Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let headers: Record<string, string>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-plan' } });
  const tenant = await createTenant(t, ORG);
  headers = tenant.headers;
  await t.ops.ensureTeam(TEAM);
  for (const code of ['PLAN_DECL', 'PLAN_CAN', 'PLAN_STDIN', 'PLAN_BAD', 'PLAN_WIN'])
    await t.ops.createSupplier(code, ORG, { documentRoot: `migrations/${code.toLowerCase()}` });
  service = await startService(t, { COHORT_PLAN_CHECK_INTERVAL_MS: '200' });
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-plan-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const lineOf = (supplier: string, external: string) =>
  JSON.stringify({ ...validAccountPayload(), import_supplier: supplier, external_account_number: external });

function cohort(supplier: string, n: number): { path: string; externals: string[] } {
  const externals = Array.from({ length: n }, (_, i) => `${supplier}-${String(i + 1).padStart(3, '0')}`);
  const path = join(dir, `${supplier}.jsonl`);
  writeFileSync(path, externals.map((e) => lineOf(supplier, e)).join('\n') + '\n');
  return { path, externals };
}

const planUrl = (supplier: string) => `/v2/data-import/import-suppliers/${supplier}/plan/`;
const getPlan = async (supplier: string) => {
  const res = await t.app.inject({ method: 'GET', url: planUrl(supplier), headers });
  return { status: res.statusCode, body: res.json() };
};
const created = (supplier: string) => t.app.db.models.Account.countDocuments({ importSupplier: supplier });

const migrate = (file: string, name: string, extra: string[] = []) =>
  runClient(
    [
      'migrate',
      file,
      '--team',
      TEAM,
      '--report',
      join(dir, name),
      '--state',
      join(dir, `${name}.sqlite`),
      ...extra,
    ],
    env,
  );

/** The client with `input` on its standard input (`migrate -`). */
function runWithStdin(args: string[], input: string): Promise<ClientRun> {
  const root = resolve(import.meta.dirname, '../..');
  return new Promise((done) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', resolve(root, 'src/cli/client/cli.ts'), ...args],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.stdin.end(input);
    proc.on('exit', (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

describe('migrate declares the cohort plan', () => {
  it('a file of N lines declares N expected; a rerun keeps one plan with N and the earlier canary and breaker', async () => {
    const { path, externals } = cohort('PLAN_DECL', 5);
    const first = await migrate(path, 'decl-1', ['--canary', '50', '--breaker', '10/100']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('cohort plan of PLAN_DECL declared: 5 expected accounts');
    const declared = await getPlan('PLAN_DECL');
    expect(declared.body).toMatchObject({
      expected_accounts: externals.length,
      canary_accounts: 50,
      breaker: { error_percent: 10, over_accounts: 100 },
      status: 'ACTIVE',
    });
    expect(await created('PLAN_DECL')).toBe(5);
    await until(async () => (await getPlan('PLAN_DECL')).body.counts.processed === 5, 'the plan counts');

    // The same file again, resumed from its state (every account done, none sent), with no plan flags.
    const again = await migrate(path, 'decl-1', []);
    expect(again.code, again.stderr).toBe(0);
    const kept = await getPlan('PLAN_DECL');
    expect(kept.body).toMatchObject({
      expected_accounts: 5,
      canary_accounts: 50,
      breaker: { error_percent: 10, over_accounts: 100 },
      counts: { processed: 5 },
    });

    // A flag given now overrides (the canary off), the breaker stays.
    const off = await migrate(path, 'decl-1', ['--canary', 'off']);
    expect(off.code, off.stderr).toBe(0);
    expect((await getPlan('PLAN_DECL')).body).toMatchObject({
      expected_accounts: 5,
      canary_accounts: null,
      breaker: { error_percent: 10, over_accounts: 100 },
    });

    // status prints the progress body with the plan.
    const status = await runClient(['status', '--supplier', 'PLAN_DECL'], env);
    expect(status.code, status.stderr).toBe(0);
    const progress = JSON.parse(status.stdout) as { plan: Record<string, unknown> | null };
    expect(progress.plan).toMatchObject({
      expected_accounts: 5,
      done: 5,
      percent_done: 100,
      finishes_in_window: null,
      pause: null,
    });
    expect(progress.plan!.projected_finish).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  }, 120_000);

  it('standard input declares nothing without --expected-accounts, and N with it', async () => {
    const input = ['PLAN_STDIN-1', 'PLAN_STDIN-2'].map((e) => lineOf('PLAN_STDIN', e)).join('\n') + '\n';
    const args = (name: string) => ['migrate', '-', '--team', TEAM, '--report', join(dir, name)];
    const plain = await runWithStdin(args('stdin-1'), input);
    expect(plain.code, plain.stderr).toBe(0);
    expect(await getPlan('PLAN_STDIN')).toMatchObject({ status: 404, body: { code: 'not_found' } });
    expect(await created('PLAN_STDIN')).toBe(2);
    const counted = await runWithStdin([...args('stdin-2'), '--expected-accounts', '40'], input);
    expect(counted.code, counted.stderr).toBe(0);
    expect((await getPlan('PLAN_STDIN')).body).toMatchObject({ expected_accounts: 40, status: 'ACTIVE' });
  }, 120_000);

  it('a plan the service refuses exits 2 naming the field path and code, before anything is sent', async () => {
    const { path } = cohort('PLAN_BAD', 3);
    const report = join(dir, 'bad');
    const bad = await migrate(path, 'bad', ['--breaker', '10/5']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^error: the cohort plan of PLAN_BAD was refused \(400 request_failed_validation\): breaker\.over_accounts: min_value\n$/,
    );
    const zero = await migrate(path, 'bad', ['--canary', '0']);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(/canary_accounts: min_value\n$/);
    const syntax = await migrate(path, 'bad', ['--breaker', 'ten']);
    expect(syntax.code).toBe(2);
    expect(syntax.stderr).toContain('--breaker');
    expect(existsSync(report)).toBe(false);
    expect(await t.app.db.models.AccountImportProcess.countDocuments({ importSupplier: 'PLAN_BAD' })).toBe(0);
    expect((await getPlan('PLAN_BAD')).status).toBe(404);
  }, 60_000);
});

describe('a paused cohort while migrate runs', () => {
  it('a canary of K pauses at exactly K PROCESSED; resumed through the API, every account is created once, none failed', async () => {
    const K = 3;
    const { path, externals } = cohort('PLAN_CAN', 12);
    const report = join(dir, 'canary');
    let stderr = '';
    let running: Promise<ClientRun> | null = null;
    const exited = new Promise<ClientRun>((done) => {
      running = runClient(
        ['migrate', path, '--team', TEAM, '--report', report, '--state', join(dir, 'canary.sqlite')].concat([
          '--canary',
          String(K),
          '--concurrency',
          '6',
          '--no-adaptive',
        ]),
        env,
        (proc) => proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString())),
      );
      void running.then(done);
    });
    const paused = await until(async () => {
      const plan = await getPlan('PLAN_CAN');
      return plan.body.status === 'PAUSED' ? plan.body : null;
    }, 'the canary to pause the cohort');
    expect(paused.pause).toMatchObject({ reason: 'canary' });
    expect(paused.counts).toMatchObject({ processed: K, in_flight: 0 });
    await until(async () => stderr.includes('paused (canary)'), 'the client to say the cohort is paused');
    expect(stderr).toContain('import-admin plan resume PLAN_CAN');
    // Held, not failed: nothing of the cohort past the canary is created, and no line has ended yet but the K.
    expect(await created('PLAN_CAN')).toBe(K);
    expect((await getPlan('PLAN_CAN')).body.counts).toMatchObject({ processed: K, errored: 0, in_flight: 0 });

    const resumed = await t.app.inject({
      method: 'POST',
      url: `${planUrl('PLAN_CAN')}resume/`,
      headers,
      payload: {},
    });
    expect(resumed.statusCode).toBe(200);
    const run = await exited;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('the cohort plan of PLAN_CAN admits again');
    const results = readResults(report);
    expect(results).toHaveLength(externals.length);
    expect(results.filter((r) => r.outcome !== 'created')).toEqual([]);
    expect(new Set(results.map((r) => r.external_account_number))).toEqual(new Set(externals));
    const accounts = await t.app.db.models.Account.find({ importSupplier: 'PLAN_CAN' }).lean();
    expect(accounts.map((a) => a.externalAccountNumber).sort()).toEqual([...externals].sort());
    const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as {
      by_outcome: Record<string, number>;
    };
    expect(summary.by_outcome).toMatchObject({ created: externals.length, failed: 0, supplier_closed: 0 });
  }, 240_000);

  it('the window ends while held: exit 4, the held accounts interrupted (plan_window_ended); a later window creates the rest once', async () => {
    const { path, externals } = cohort('PLAN_WIN', 6);
    const report = join(dir, 'window-1');
    const state = join(dir, 'window.sqlite');
    const inMs = (ms: number) => new Date(Date.now() + ms).toISOString().replace(/\.\d+Z$/, 'Z');
    const args = ['migrate', path, '--team', TEAM, '--state', state, '--concurrency', '6', '--no-adaptive'];
    // The canary holds all but 2; the window ends while they wait.
    const first = await runClient(
      [...args, '--report', report, '--canary', '2', '--window-end', inMs(15_000)],
      env,
    );
    expect(first.code, first.stderr).toBe(4);
    expect(first.stderr).toMatch(/error: the window of the cohort plan ended: 4 account\(s\) did not start/);
    const results = readResults(report);
    expect(results.filter((r) => r.outcome === 'created')).toHaveLength(2);
    const held = results.filter((r) => r.outcome !== 'created');
    expect(held.map((r) => [r.outcome, r.errors])).toEqual(
      held.map(() => ['interrupted', [{ code: 'plan_window_ended', attr: 'non_field_errors' }]]),
    );
    expect(await created('PLAN_WIN')).toBe(2);

    // Approved, and a later window: the same command with the same state creates the other 4, once each.
    expect(
      (await t.app.inject({ method: 'POST', url: `${planUrl('PLAN_WIN')}resume/`, headers, payload: {} }))
        .statusCode,
    ).toBe(200);
    const second = await runClient(
      [...args, '--report', join(dir, 'window-2'), '--window-end', inMs(600_000)],
      env,
    );
    expect(second.code, second.stderr).toBe(0);
    const again = readResults(join(dir, 'window-2'));
    expect(again.filter((r) => r.done_earlier).map((r) => r.outcome)).toEqual(['created', 'created']);
    expect(again.filter((r) => !r.done_earlier).map((r) => r.outcome)).toEqual(held.map(() => 'created'));
    const accounts = await t.app.db.models.Account.find({ importSupplier: 'PLAN_WIN' }).lean();
    expect(accounts.map((a) => a.externalAccountNumber).sort()).toEqual([...externals].sort());
    expect((await getPlan('PLAN_WIN')).body).toMatchObject({ expected_accounts: 6, canary_accounts: 2 });
  }, 180_000);
});
