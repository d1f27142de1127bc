import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdaptiveConcurrency,
  INITIAL_LIMIT,
  LATENCY_TOLERANCE,
  MAX_PROBE_WINDOWS,
  PROBE_WINDOWS,
} from '../../src/cli/client/concurrency.js';
import { CreateGate } from '../../src/cli/client/create-gate.js';
import { Interrupted } from '../../src/cli/client/stop.js';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { clientTenant, readResults, runClient, startService } from './support.js';

/**
 * A controller on a clock of its own. `answer`: `n` requests one after the other, each sent as the one before
 * it was answered and taking `ms`; `together`: `n` requests sent at the same moment, answered one after the other.
 */
function controller(ceiling = 64) {
  let now = 0;
  const c = new AdaptiveConcurrency(ceiling, () => now);
  const retryAfter = (status: number) => (status === 429 ? 1_000 : null);
  const answer = (n: number, status = 201, ms = 10, kind = '') => {
    for (let i = 0; i < n; i++) {
      now += ms;
      c.observe(status, ms, retryAfter(status), kind);
    }
  };
  const together = (n: number, status = 201, ms = 10) => {
    const sent = now;
    for (let i = 0; i < n; i++) {
      now += 1;
      c.observe(status, now - sent + ms, retryAfter(status));
    }
  };
  /** `n` refusals of requests refused before and sent again, one after the other. */
  const resent = (n: number) => {
    for (let i = 0; i < n; i++) {
      now += 10;
      c.observe(429, 10, 1_000, '', true);
    }
  };
  return { c, answer, together, resent };
}

describe('adaptive concurrency', () => {
  it('doubles while answers are quick, then grows by one after the first refusal, cut by 30 %', () => {
    const { c, answer, together, resent } = controller();
    expect(c.limit).toBe(INITIAL_LIMIT);
    answer(8);
    expect(c.limit).toBe(8);
    answer(8);
    expect(c.limit).toBe(16);
    answer(16);
    expect(c.limit).toBe(32);
    // Many refusals of one overshoot: one cut, for requests sent before the cut and for those sent again after
    // it (refused before).
    together(5, 429);
    expect(c.limit).toBe(22);
    resent(3);
    expect(c.limit).toBe(22);
    answer(22);
    expect(c.limit).toBe(23);
    expect(c.summary()).toMatchObject({ mode: 'adaptive', peak: 32, refused: 8, cuts: 1 });
    // Refused in the first window one line up: back that one line.
    answer(1, 429);
    expect(c.limit).toBe(22);
    answer(22);
    answer(22);
    expect(c.limit).toBe(22);
    // Refused at a level that had passed a clean window: the service takes fewer now, a cut of 30 %.
    answer(1, 429);
    expect(c.limit).toBe(15);
  });

  it('judges a level by the requests sent at it: answers to requests sent before it changed do not end its window', () => {
    const { c, answer, together } = controller();
    answer(8);
    expect(c.limit).toBe(8);
    // Quick answers (stages, say) to requests sent at the level before, while the level's own are still out.
    together(16, 201, 50);
    expect(c.limit).toBe(8);
    answer(8);
    expect(c.limit).toBe(16);
  });

  it('probes the level the service last refused at only after a few clean windows just below it, less often after each refused probe', () => {
    const { c, answer } = controller();
    answer(8);
    answer(8);
    expect(c.limit).toBe(16);
    answer(1, 429);
    expect(c.limit).toBe(11);
    // One more line a clean window.
    for (const level of [11, 12, 13, 14]) {
      answer(level);
      expect(c.limit).toBe(level + 1);
    }
    // At 15, one below the refused 16: it stays for PROBE_WINDOWS clean windows, then tries 16 again; each
    // refused probe steps back one line and doubles the windows before the next one.
    const probeAfter = (windows: number) => {
      for (let i = 1; i < windows; i++) {
        answer(15);
        expect(c.limit).toBe(15);
      }
      answer(15);
      expect(c.limit).toBe(16);
    };
    const refusedProbe = () => {
      answer(1, 429);
      expect(c.limit).toBe(15);
    };
    probeAfter(PROBE_WINDOWS);
    refusedProbe();
    probeAfter(PROBE_WINDOWS * 2);
    refusedProbe();
    probeAfter(PROBE_WINDOWS * 4);
    // The longest wait between probes.
    for (let i = 0; i < 10; i++) {
      refusedProbe();
      for (let w = 0; w < MAX_PROBE_WINDOWS; w++) answer(15);
    }
    expect(c.limit).toBe(16);
    // A refusal at a level that had passed a clean window (15): the service's capacity fell, a cut of 30 %,
    // and probing starts over.
    refusedProbe();
    answer(15);
    answer(1, 429);
    expect(c.limit).toBe(10);
  });

  it('never passes the ceiling', () => {
    const { c, answer } = controller(10);
    for (let i = 0; i < 10; i++) answer(16);
    expect(c.limit).toBe(10);
  });

  it('holds (never cuts) while answers are far slower than usual for their kind of request', () => {
    const { c, answer } = controller();
    const kinds = (n: number, createMs: number) => {
      // A stage is quick, a create slow: each is weighed against its own usual time.
      for (let i = 0; i < n / 2; i++) {
        answer(1, 201, 5, 'POST /v1/data-import/account-import-process/create-or-update');
        answer(1, 201, createMs, 'POST /v1/data-import/account-import-process/process');
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

describe('the creates’ gate', () => {
  it('lets creates in up to the share the last answer named, wakes them as answers come, ends waits on a stop', async () => {
    const gate = new CreateGate();
    // Nothing known yet: nothing waits.
    for (let i = 0; i < 3; i++) await gate.enter();
    gate.leave(2);
    gate.leave(2);
    // One in flight, a share of 2: one more enters, the next waits for an answer.
    await gate.enter();
    let entered = false;
    const next = gate.enter().then(() => (entered = true));
    await Promise.resolve();
    expect(entered).toBe(false);
    gate.leave(2);
    await next;
    expect(entered).toBe(true);
    const stop = new AbortController();
    const given = gate.enter(stop.signal);
    stop.abort();
    await expect(given).rejects.toBeInstanceOf(Interrupted);
    expect(gate.summary()).toMatchObject({ creation_share: 2, creates_waited_peak: 1 });
    // The two in flight answered; a send that throws leaves its room all the same.
    gate.leave(2);
    gate.leave(2);
    const failing = () => Promise.reject(new Error('network'));
    await expect(gate.through(failing)).rejects.toThrow('network');
    const answer = { status: 201, body: null, attempts: 1, creationShare: 3 };
    expect(await gate.through(async () => answer)).toBe(answer);
    expect(gate.summary()).toMatchObject({ creation_share: 3 });
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
      // The creates paced on the service's share (8 here): the lines run their stages ahead, nothing refused.
      expect(summary.concurrency.creation_share).toBe(8);
      expect(summary.concurrency.creates_waited_peak).toBeGreaterThan(0);
      expect(summary.concurrency.refused_pct).toBeLessThan(5);
      // Without a terminal, progress is a plain line that plans: the total counted from the file.
      expect(run.stderr).toMatch(/\[import-client\] .*% \| \d+\/400 \|/);
    },
  );
});
