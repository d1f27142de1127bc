import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, runClient, startService } from './support.js';

// The resume state belongs to one target (service, organisation, mode, team, dry run), is used by one run at a
// time, and never skips an account whose outcome a rerun could change.
const SUPPLIER = 'STATE_SUP';
const TEAM = 'State Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let otherOrgEnv: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-state' } });
  const tenant = await clientTenant(t, 'State Org', SUPPLIER, TEAM);
  const other = await clientTenant(t, 'Other State Org', 'OTHER_STATE', TEAM);
  // Supplier status changes are seen at once (no settings cache in the service's processes).
  service = await startService(t, { AUTH_CACHE_TTL_MS: '0' });
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  otherOrgEnv = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: other.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-state-'));
});
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cohort(name: string, externals: string[]): string {
  const path = join(dir, name);
  const lines = externals.map((e) =>
    JSON.stringify({ ...validAccountPayload(), import_supplier: SUPPLIER, external_account_number: e }),
  );
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

const outcomes = (report: string) =>
  readFileSync(join(report, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { outcome: string }).outcome);

describe('the resume state', () => {
  it('refuses another organisation, team or mode, naming the difference; the same target resumes', async () => {
    const file = cohort('a.jsonl', ['ST-1']);
    const state = join(dir, 'a.sqlite');
    const migrate = (e: Record<string, string>, ...extra: string[]) =>
      runClient(
        ['migrate', file, '--state', state, '--report', join(dir, `r-${Math.random()}`), '--quiet', ...extra],
        e,
      );
    expect((await migrate(env, '--team', TEAM)).code).toBe(0);
    const otherTeam = await migrate(env, '--team', 'Another Team');
    expect(otherTeam.code).toBe(2);
    expect(otherTeam.stderr).toContain('--team: "State Team" in the state, "Another Team" now');
    const otherOrg = await migrate(otherOrgEnv, '--team', TEAM);
    expect(otherOrg.code).toBe(2);
    expect(otherOrg.stderr).toContain('organisation (IMPORT_API_KEY)');
    const v2 = await migrate(env, '--team', TEAM, '--mode', 'v2');
    expect(v2.code).toBe(2);
    expect(v2.stderr).toContain('--mode: "v1" in the state, "v2" now');
    // A refused run writes no report (the state is checked before the report starts).
    const reports = () => readdirSync(dir).filter((n) => n.startsWith('r-'));
    expect(reports()).toHaveLength(1);
    expect((await migrate(env, '--team', TEAM)).code).toBe(0);
    expect(reports()).toHaveLength(2);
  });

  it('sends again an account that ended supplier_closed: only created and already imported are skipped', async () => {
    const file = cohort('b.jsonl', ['ST-2']);
    const state = join(dir, 'b.sqlite');
    await t.ops.setSupplierStatus(SUPPLIER, 'Paused');
    const first = join(dir, 'b-first');
    expect(
      (
        await runClient(
          ['migrate', file, '--team', TEAM, '--state', state, '--report', first, '--quiet'],
          env,
        )
      ).code,
    ).toBe(1);
    expect(outcomes(first)).toEqual(['supplier_closed']);
    await t.ops.setSupplierStatus(SUPPLIER, 'Ongoing');
    const second = join(dir, 'b-second');
    expect(
      (
        await runClient(
          ['migrate', file, '--team', TEAM, '--state', state, '--report', second, '--quiet'],
          env,
        )
      ).code,
    ).toBe(0);
    expect(outcomes(second)).toEqual(['created']);
    expect(await t.app.db.models.Account.countDocuments({ externalAccountNumber: 'ST-2' })).toBe(1);
  });

  it("one run at a time: a live run holds the state; a dead run's lock is taken over", async () => {
    const file = cohort('c.jsonl', ['ST-3']);
    const state = join(dir, 'c.sqlite');
    const run = () =>
      runClient(
        [
          'migrate',
          file,
          '--team',
          TEAM,
          '--state',
          state,
          '--report',
          join(dir, `c-${Math.random()}`),
          '--quiet',
        ],
        env,
      );
    // This test's own process is alive: its pid in the lock means "a run is going on".
    writeFileSync(`${state}.lock`, String(process.pid));
    const refused = await run();
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`another run (pid ${process.pid}) is using the state file`);
    // A pid no process has (beyond the kernel's limit): a run that died without unlocking.
    writeFileSync(`${state}.lock`, '4194305');
    const resumed = await run();
    expect(resumed.code, resumed.stderr).toBe(0);
  });
});
