import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveConcurrency,
  INITIAL_LIMIT,
  LATENCY_TOLERANCE,
  PROBE_WINDOWS,
} from '../../src/cli/client/concurrency.js';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, runClient, startService } from './support.js';

/** `n` answers of `status` taking `ms` each. */
const answer = (c: AdaptiveConcurrency, n: number, status = 201, ms = 10) => {
  for (let i = 0; i < n; i++) c.observe(status, ms, status === 429 ? 1_000 : null);
};

describe('adaptive concurrency', () => {
  it('doubles while answers are quick, then grows by one after the first refusal, cut by 30 %', () => {
    const c = new AdaptiveConcurrency(64);
    expect(c.limit).toBe(INITIAL_LIMIT);
    answer(c, 8);
    expect(c.limit).toBe(8);
    answer(c, 8);
    expect(c.limit).toBe(16);
    answer(c, 16);
    expect(c.limit).toBe(32);
    // Many refusals of one overshoot: one cut.
    answer(c, 5, 429);
    expect(c.limit).toBe(22);
    answer(c, 22);
    answer(c, 22);
    expect(c.limit).toBe(23);
    expect(c.summary()).toMatchObject({ mode: 'adaptive', peak: 32, refused: 5, cuts: 1 });
  });

  it('probes the level the service last refused at only after a few clean windows just below it', () => {
    const c = new AdaptiveConcurrency(64);
    answer(c, 8);
    answer(c, 8);
    expect(c.limit).toBe(16);
    answer(c, 1, 429);
    expect(c.limit).toBe(11);
    // The window the refusal cut ends without growth; then one more line a clean window.
    answer(c, 11);
    expect(c.limit).toBe(11);
    for (const level of [11, 12, 13, 14]) {
      answer(c, level);
      expect(c.limit).toBe(level + 1);
    }
    // At 15, one below the refused 16: it stays for PROBE_WINDOWS clean windows, then tries 16 again.
    for (let i = 1; i < PROBE_WINDOWS; i++) {
      answer(c, 15);
      expect(c.limit).toBe(15);
    }
    answer(c, 15);
    expect(c.limit).toBe(16);
  });

  it('never passes the ceiling', () => {
    const c = new AdaptiveConcurrency(10);
    for (let i = 0; i < 10; i++) answer(c, 16);
    expect(c.limit).toBe(10);
  });

  it('holds (never cuts) while answers are far slower than usual for their kind of request', () => {
    const c = new AdaptiveConcurrency(64);
    const kinds = (n: number, createMs: number) => {
      // A stage is quick, a create slow: each is weighed against its own usual time.
      for (let i = 0; i < n / 2; i++) {
        c.observe(201, 5, null, 'POST /v1/data-import/account-import-process/create-or-update');
        c.observe(201, createMs, null, 'POST /v1/data-import/account-import-process/process');
      }
    };
    kinds(8, 300);
    kinds(8, 300);
    expect(c.limit).toBe(16);
    kinds(16, 300 * (LATENCY_TOLERANCE * 2 + 1));
    expect(c.limit).toBe(16);
    kinds(16, 300);
    expect(c.limit).toBe(17);
    expect(c.summary()).toMatchObject({ held_for_latency: 1, cuts: 0 });
  });

  it('holds new lines for the Retry-After the service asked for', () => {
    let now = 1_000;
    const c = new AdaptiveConcurrency(64, () => now);
    c.observe(429, 5, 2_000);
    expect(c.holdMs()).toBe(2_000);
    now += 1_500;
    expect(c.holdMs()).toBe(500);
    now += 600;
    expect(c.holdMs()).toBe(0);
  });
});

// Against the real service (web + worker) whose creation limit is low: by default the client finds it, and
// the service refuses only a few of its requests.
const SUPPLIER = 'ADAPT_SUP';
const TEAM = 'Adapt Team';
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-adaptive' } });
  const tenant = await clientTenant(t, 'Adapt Org', SUPPLIER, TEAM);
  service = await startService(t, { ACCOUNT_CREATION_CONCURRENCY: '8' });
  env = { IMPORT_BASE_URL: service.baseUrl, IMPORT_API_KEY: tenant.apiKey };
  dir = mkdtempSync(join(tmpdir(), 'import-client-adaptive-'));
}, 120_000);
afterAll(async () => {
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('migrate with the default (adaptive) concurrency', () => {
  it(
    'creates every account below a creation limit of 8, with under 5 % of requests refused',
    { timeout: 240_000 },
    async () => {
      const file = join(dir, 'cohort.jsonl');
      const lines = Array.from({ length: 400 }, (_, i) =>
        JSON.stringify({
          ...validAccountPayload(),
          import_supplier: SUPPLIER,
          external_account_number: `AD-${i}`,
        }),
      );
      writeFileSync(file, lines.join('\n') + '\n');
      const report = join(dir, 'report');
      const run = await runClient(['migrate', file, '--team', TEAM, '--report', report], env);
      expect(run.code, run.stderr).toBe(0);
      expect(readResults(report).filter((r) => r.outcome === 'created')).toHaveLength(400);
      const summary = JSON.parse(run.stdout) as { concurrency: Record<string, number> };
      expect(summary.concurrency).toMatchObject({ mode: 'adaptive', ceiling: 64 });
      expect(summary.concurrency.peak).toBeGreaterThan(INITIAL_LIMIT);
      expect(summary.concurrency.refused_pct).toBeLessThan(5);
      // Without a terminal, progress is a plain line that plans: the total counted from the file.
      expect(run.stderr).toMatch(/\[import-client\] .*% \| \d+\/400 \|/);
    },
  );
});
