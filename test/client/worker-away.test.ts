import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { until } from '../creation/support.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, readSummary, runClient, startService, v1Status } from './support.js';

// `migrate` against a service whose worker is away: every create waits on the queue until the worker comes
// back. The client used to wait at most 30 s for the lines in flight at the end of its input, then wrote the
// report without them (and exited 0); it used to give a throttled create up after about 25 s of 429s.
const SUPPLIER = 'AWAY_SUP';
const TEAM = 'Away Team';
/** How long the worker is away: longer than the client's old 30 s wait at the end of its input. */
const OUTAGE_MS = 40_000;
let t: TestApp;
let headers: Record<string, string>;
let apiKey: string;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-away' } });
  const tenant = await clientTenant(t, 'Away Org', SUPPLIER, TEAM);
  headers = tenant.headers;
  apiKey = tenant.apiKey;
  dir = mkdtempSync(join(tmpdir(), 'import-client-away-'));
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cohort(name: string, externals: string[]): string {
  const path = join(dir, `${name}.jsonl`);
  const lines = externals.map((external) =>
    JSON.stringify({
      ...validAccountPayload(),
      import_supplier: SUPPLIER,
      external_account_number: external,
    }),
  );
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

// The default --concurrency (8): every line of these files is in flight when the input ends.
const migrate = (file: string, name: string, extra: string[] = []) => [
  'migrate',
  file,
  '--team',
  TEAM,
  '--report',
  join(dir, name),
  '--state',
  join(dir, `${name}.sqlite`),
  '--quiet',
  ...extra,
];

/** Resolves once every account's create is queued or running on the service (its v1 status IN_PROGRESS). */
const creationsWaiting = (externals: string[]) =>
  until(
    async () =>
      (await Promise.all(externals.map((e) => v1Status(t, headers, SUPPLIER, e)))).every(
        (s) => s === 'IN_PROGRESS',
      ),
    'the creates to wait on the queue',
    60_000,
  );

async function createdOnService(prefix: string): Promise<number> {
  return t.app.db.models.Account.countDocuments({
    importSupplier: SUPPLIER,
    externalAccountNumber: { $regex: `^${prefix}` },
  });
}

it(
  'at the end of its input, migrate waits for every line in flight however long: the worker away for 40 s',
  { timeout: 300_000 },
  async () => {
    const service = await startService(t, {}, { worker: false });
    try {
      const externals = ['AWAY-1', 'AWAY-2'];
      const run = runClient(migrate(cohort('away', externals), 'away'), {
        IMPORT_BASE_URL: service.baseUrl,
        IMPORT_API_KEY: apiKey,
      });
      await creationsWaiting(externals);
      // The outage itself (how long the worker is away), not a synchronisation.
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      service.startWorker();
      const done = await run;
      expect(done.code, done.stderr).toBe(0);
      // Both lines reported, each a success with its number. (On a slow machine the service's own 60 s wait may
      // run out first: the client then follows the status and may find the account there, `already_imported`.)
      const results = readResults(join(dir, 'away'));
      expect(results.map((r) => r.external_account_number).sort()).toEqual(externals);
      for (const r of results) {
        expect(['created', 'already_imported']).toContain(r.outcome);
        expect(r.kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
      }
      const summary = readSummary(join(dir, 'away'));
      expect((summary.by_outcome.created ?? 0) + (summary.by_outcome.already_imported ?? 0)).toBe(2);
      expect(summary.lines).toBe(2);
      const accounts = await t.app.db.models.Account.find({
        importSupplier: SUPPLIER,
        externalAccountNumber: { $in: externals },
      }).lean();
      expect(accounts.map((a) => a.number).sort()).toEqual(
        results.map((r) => r.kraken_account_number).sort(),
      );
    } finally {
      await service.stop();
    }
  },
);

it(
  'SIGTERM drains for 30 s, then the lines still waiting are reported interrupted (exit 143); a rerun creates them',
  { timeout: 300_000 },
  async () => {
    const service = await startService(t, {}, { worker: false });
    const env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: apiKey };
    try {
      const externals = ['INT-1', 'INT-2'];
      const file = cohort('int', externals);
      const stopped = await runClient(migrate(file, 'int'), env, (proc) => {
        void creationsWaiting(externals).then(() => proc.kill('SIGTERM'));
      });
      expect(stopped.signal).toBeNull();
      expect(stopped.code, stopped.stderr).toBe(143);
      expect(stopped.stderr).toContain('SIGTERM');
      const results = readResults(join(dir, 'int'));
      expect(results.map((r) => [r.external_account_number, r.outcome, r.errors]).sort()).toEqual([
        ['INT-1', 'interrupted', [{ code: 'interrupted', attr: 'non_field_errors' }]],
        ['INT-2', 'interrupted', [{ code: 'interrupted', attr: 'non_field_errors' }]],
      ]);
      const summary = readSummary(join(dir, 'int'));
      expect(summary).toMatchObject({ interrupted: true, lines: 2, sent: 2 });
      expect(summary.by_outcome).toMatchObject({ interrupted: 2, created: 0, failed: 0 });
      expect(summary.runs.map((r) => r.ended)).toEqual(['interrupted']);

      // Interrupted lines are not recorded as done: the rerun (same state) sends them, once the worker is back.
      service.startWorker();
      const rerun = await runClient(migrate(file, 'int'), env);
      expect(rerun.code, rerun.stderr).toBe(0);
      const again = readResults(join(dir, 'int'));
      expect(again).toHaveLength(2);
      for (const r of again) expect(['created', 'already_imported']).toContain(r.outcome);
      expect(again.some((r) => r.done_earlier)).toBe(false);
      expect(await createdOnService('INT-')).toBe(2);
    } finally {
      await service.stop();
    }
  },
);

it(
  'a 429 is sent again as its Retry-After says for as long as --poll-timeout allows, past the old ~25 s',
  { timeout: 300_000 },
  async () => {
    // One creation at a time: while the first account's create waits on the queue, the second is answered 429.
    const service = await startService(t, { ACCOUNT_CREATION_CONCURRENCY: '1' }, { worker: false });
    try {
      const externals = ['THR-1', 'THR-2'];
      // Fixed lines: the adaptive default would hold the second create on the client (a share of 1).
      const flags = ['--poll-timeout', '120', '--no-adaptive', '--concurrency', '2'];
      const run = runClient(migrate(cohort('thr', externals), 'thr', flags), {
        IMPORT_BASE_URL: service.baseUrl,
        IMPORT_API_KEY: apiKey,
      });
      await until(
        async () =>
          (await Promise.all(externals.map((e) => v1Status(t, headers, SUPPLIER, e)))).includes(
            'IN_PROGRESS',
          ),
        'one create to wait on the queue',
        60_000,
      );
      // The outage itself (how long the worker is away), not a synchronisation.
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      service.startWorker();
      const done = await run;
      expect(done.code, done.stderr).toBe(0);
      const results = readResults(join(dir, 'thr'));
      expect(results).toHaveLength(2);
      for (const r of results) expect(['created', 'already_imported']).toContain(r.outcome);
      // The throttled line was answered 429 and sent again after each Retry-After it was given (the service's
      // estimate from the caller's position and the mean time a slot is held), through the whole outage: past
      // the old cap of 20 tries (~25 s) whatever the estimate.
      const throttled = results.find((r) => r.attempts > 1);
      expect(throttled, JSON.stringify(results)).toBeDefined();
      expect(readSummary(join(dir, 'thr')).server_throttled).toBeGreaterThan(1);
      expect(await createdOnService('THR-')).toBe(2);
    } finally {
      await service.stop();
    }
  },
);
