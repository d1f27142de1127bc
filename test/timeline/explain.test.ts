import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { accountPayload, apiFor, SUPPLIER, TEAM, type Api } from '../creation/support.js';
import { clientTenant, runClient, startService } from '../client/support.js';

// `import-client explain <supplier> <external>` as a user runs it, against the real service (web and worker
// processes): the timeline in words, or as JSON, exit 0; an account it does not know, exit 2 as `status` does.
let t: TestApp;
let api: Api;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'timeline-explain' } });
  const tenant = await clientTenant(t, 'Explain Org', SUPPLIER, TEAM);
  api = apiFor(t, tenant.headers);
  service = await startService(t);
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  expect((await api.stage(accountPayload('TL-EXPLAIN'))).statusCode).toBe(201);
  expect((await api.create('TL-EXPLAIN')).statusCode).toBe(201);
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
});

describe('import-client explain', () => {
  it('prints every step and why, and exits 0', async () => {
    const run = await runClient(['explain', SUPPLIER, 'TL-EXPLAIN'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe(`${SUPPLIER}/TL-EXPLAIN: PROCESSED`);
    expect(lines.slice(1, -1).map((l) => l.trim().split(/\s+/)[1])).toEqual([
      'staged',
      'queued',
      'started',
      'created',
    ]);
    expect(run.stdout).toMatch(/started +Started on worker \S+:\d+ \(a v1 create\)/);
    expect(lines[lines.length - 1]).toMatch(/^why: done: Done: created as A-[0-9A-F]{8}\./);
  });

  it('--json: the timeline as the service answers it, every page joined', async () => {
    const run = await runClient(['explain', SUPPLIER, 'TL-EXPLAIN', '--json'], env);
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout) as {
      status: string;
      steps: { step: string }[];
      why: { code: string };
    };
    expect(body.status).toBe('PROCESSED');
    expect(body.steps.map((s) => s.step)).toEqual(['staged', 'queued', 'started', 'created']);
    expect(body.why.code).toBe('done');
  });

  it('an account it does not know: one line on stderr, exit 2', async () => {
    const run = await runClient(['explain', SUPPLIER, 'TL-UNKNOWN'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `error: no import process for ${SUPPLIER}/TL-UNKNOWN (the server answered 404)\n`,
    );
  });
});
