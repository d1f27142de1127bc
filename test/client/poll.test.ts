import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, runClient, startService } from './support.js';

// A status that never becomes final (here: no worker runs, so every scheduled account stays PENDING) ends the
// line `failed` with `status_unknown` once --poll-timeout has passed: the client never waits for ever.
const SUPPLIER = 'POLL_SUP';
const TEAM = 'Poll Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-poll' } });
  const tenant = await clientTenant(t, 'Poll Org', SUPPLIER, TEAM);
  service = await startService(t, {}, { worker: false });
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-poll-'));
});
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('--mode v2 gives up on a status that never ends: failed, status_unknown, the last status kept', async () => {
  const file = join(dir, 'cohort.jsonl');
  const lines = ['POLL-1', ' POLL-2 '].map((external) =>
    JSON.stringify({
      ...validAccountPayload(),
      import_supplier: SUPPLIER,
      external_account_number: external,
    }),
  );
  writeFileSync(file, lines.join('\n') + '\n');
  const report = join(dir, 'report');
  const run = await runClient(
    ['migrate', file, '--mode', 'v2', '--team', TEAM, '--poll-timeout', '2', '--report', report, '--quiet'],
    env,
  );
  expect(run.code, run.stderr).toBe(1);
  const results = readFileSync(join(report, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { outcome: string; http_status: number; errors: { code: string }[] });
  expect(results).toHaveLength(2);
  for (const r of results) {
    expect(r.outcome).toBe('failed');
    // The account exists (PENDING): the polls were answered 200, not 404.
    expect(r.http_status).toBe(200);
    expect(r.errors).toEqual([{ code: 'status_unknown', attr: 'non_field_errors' }]);
  }
});
