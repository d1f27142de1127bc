import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { onStart } from '../../src/domain/import-process/state.js';
import { ProcessEventLog } from '../../src/storage/processes/process-events.js';
import type { ProgressCounters } from '../../src/storage/progress/progress-counters.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  TEAM,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { inMs, v2For, type V2 } from '../v2/support.js';

let t: TestApp;
let v1: Api;
let v2: V2;
let headers: Record<string, string>;
let workers: TestWorkers;
const withTeam = (external: string) => ({ ...accountPayload(external), operations_team_name: TEAM });

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'progress' } });
  const tenant = await setupTenant(t);
  headers = tenant.headers;
  v1 = apiFor(t, headers);
  v2 = v2For(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const base = `/v2/data-import/import-suppliers/${SUPPLIER}`;
const progress = async (h = headers) => t.app.inject({ method: 'GET', url: `${base}/progress/`, headers: h });
const accounts = (query: string, h = headers) =>
  t.app.inject({ method: 'GET', url: `${base}/accounts/?${query}`, headers: h });

/** Every account's v2 status, as the per-account endpoint answers it, tallied. */
async function tally(externals: string[]) {
  const counts: Record<string, number> = {};
  for (const external of externals) {
    const res = await v2.status(external);
    expect(res.statusCode).toBe(200);
    const status = (res.json() as { status: string }).status;
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

const nonZero = (accountsBody: Record<string, number>) =>
  Object.fromEntries(Object.entries(accountsBody).filter(([k, v]) => k !== 'total' && v > 0));

const statusIs = (external: string, wanted: string) =>
  until(async () => (await v2.status(external)).json().status === wanted, `${external} ${wanted}`);

describe('cohort progress', () => {
  const externals: string[] = [];

  it('counts exactly what the per-account statuses say after a mixed run, and the rebuild agrees', async () => {
    // Created through v1.
    for (const e of ['P-1', 'P-2', 'P-3']) {
      expect((await v1.stage(accountPayload(e))).statusCode).toBe(201);
      expect((await v1.create(e)).statusCode).toBe(201);
      externals.push(e);
    }
    // Staged only (v1), and scheduled for later (v2).
    for (const e of ['S-1', 'S-2']) {
      expect((await v1.stage(accountPayload(e))).statusCode).toBe(201);
      externals.push(e);
    }
    const later = { schedule_window_start: inMs(3_600_000), schedule_window_end: inMs(7_200_000) };
    expect((await v2.schedule(withTeam('L-1'), later)).statusCode).toBe(201);
    externals.push('L-1');
    // Cancelled.
    expect((await v2.schedule(withTeam('C-1'), later)).statusCode).toBe(201);
    expect((await v2.cancel('C-1')).statusCode).toBe(200);
    externals.push('C-1');
    // Created through v2, and two dry runs (one of them errors: the billing postcode is invalid at creation).
    expect((await v2.schedule(withTeam('V-1'))).statusCode).toBe(201);
    expect((await v2.schedule(withTeam('D-1'), { is_dry_run: true })).statusCode).toBe(201);
    externals.push('V-1', 'D-1');
    // A validation failure at creation time: the staged data no longer passes the rules.
    expect((await v1.stage(accountPayload('E-1'))).statusCode).toBe(201);
    await stagedPayloadModel(t.app.db.conn).updateOne(
      { _id: processKey(SUPPLIER, 'E-1') },
      {
        $set: {
          payload: JSON.stringify({ ...accountPayload('E-1'), billing_postcode: 'ABC' }),
          // Staged under other rules (another deployment's fingerprint): the creation validates it again.
          validatedWith: 'an earlier deployment',
        },
      },
    );
    expect((await v1.create('E-1')).statusCode).toBe(400);
    externals.push('E-1');
    // Skipped: one staged before, one never staged (counted apart, not in the total).
    expect((await v1.stage(accountPayload('K-1'))).statusCode).toBe(201);
    await t.ops.skipAccount(SUPPLIER, 'K-1');
    await t.ops.skipAccount(SUPPLIER, 'K-2');
    await t.ops.skipAccount(SUPPLIER, 'K-2');
    // A worker that dies mid-creation: its STARTED event is written, its count never is (a crash between the
    // two). The next progress read repairs it from the process's history.
    expect((await v1.stage(accountPayload('X-1'))).statusCode).toBe(201);
    externals.push('X-1');
    const real = t.app.storage.progress!;
    const dying = Object.create(real) as ProgressCounters;
    dying.apply = () => Promise.reject(new Error('killed'));
    const log = new ProcessEventLog(t.app.db.models.ImportEvent, dying, null, t.app.storage.webhooks.outbox);
    const crashed = log.append(
      {
        key: processKey(SUPPLIER, 'X-1'),
        organisationId: (await t.app.db.models.ImportSupplier.findOne({ code: SUPPLIER }).lean())!
          .organisationId,
        importSupplier: SUPPLIER,
        externalAccountNumber: 'X-1',
      },
      (state) => {
        const decision = onStart(state, 'dead-run', null);
        return { event: 'start' in decision ? decision.start : null, result: null };
      },
      new Date(),
    );
    await expect(crashed).rejects.toThrow('killed');

    await statusIs('V-1', 'PROCESSED');
    await statusIs('D-1', 'DRY_RUN_SUCCEEDED');
    const expected = await tally(externals);
    expect(expected).toMatchObject({ PROCESSED: 4, PENDING: 3, CANCELLED: 1, IN_PROGRESS: 1, ERRORED: 1 });

    // Counts may lag a change by up to about 2 seconds (the crashed writer's repair).
    const equal = (b: { accounts: Record<string, number> }) => {
      const got = nonZero(b.accounts);
      return (
        Object.keys(expected).every((k) => got[k] === expected[k]) &&
        Object.keys(got).length === Object.keys(expected).length
      );
    };
    await until(
      async () => equal((await progress()).json()),
      'progress equal to the per-account statuses',
      10_000,
    ).catch(() => undefined);
    const body = (await progress()).json();
    expect(nonZero(body.accounts)).toEqual(expected);
    expect(body.accounts.total).toBe(externals.length);
    expect(body.skipped).toBe(2);
    expect(body.processed_per_minute.last_1m).toBeGreaterThan(0);
    expect(body.eta_seconds).toEqual(expect.any(Number));
    expect(body.failures).toEqual([
      { code: 'account_failed_validation', count: 1, attrs: [{ attr: 'billing_postcode', count: 1 }] },
    ]);

    // The first change of a new supplier starts its counts marked to be verified: the workers rebuild them
    // from the records once, by themselves.
    await until(async () => (await progress()).json().rebuilding === false, 'the counts settled', 30_000);
    // Nothing drifted: the rebuild from the records finds what the counters hold.
    const rebuilt = await t.ops.rebuildProgress(SUPPLIER);
    expect(rebuilt).toMatchObject({ drifted: false, differences: [] });
    expect(nonZero((await progress()).json().accounts)).toEqual(expected);

    // A corrupted counter: the rebuild says so, and puts it right.
    const redis = t.app.redis;
    const base = `{${t.config.QUEUE_PREFIX}:progress:${SUPPLIER}}`;
    const epoch = await redis.hget(`${base}:meta`, 'cur');
    await redis.hincrby(`${base}:${epoch}:counts`, 'PENDING', 5);
    expect((await progress()).json().accounts.PENDING).toBe(expected.PENDING! + 5);
    const repaired = await t.ops.rebuildProgress(SUPPLIER);
    expect(repaired.drifted).toBe(true);
    expect(repaired.differences).toEqual([
      { field: 'PENDING', counted: expected.PENDING! + 5, rebuilt: expected.PENDING },
    ]);
    expect(nonZero((await progress()).json().accounts)).toEqual(expected);
  });

  it('counts a post-import request once, however often it is sent', async () => {
    const notes = {
      import_supplier: SUPPLIER,
      external_account_number: 'P-1',
      notes: [{ body: 'Welcome call done.', created_at: '2025-06-01T09:15:00Z' }],
    };
    for (let i = 0; i < 2; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/data-import/notes/create/',
        headers,
        payload: notes,
      });
      expect(res.statusCode).toBe(201);
    }
    expect((await progress()).json().post_import).toMatchObject({ notes: 1, transactions: 0 });
    expect((await t.ops.rebuildProgress(SUPPLIER)).drifted).toBe(false);
  });

  it('opens the accounts behind a count, by status and error code, in keyset pages', async () => {
    const failed = await accounts('status=ERRORED&code=account_failed_validation');
    expect(failed.statusCode).toBe(200);
    expect(failed.json()).toEqual({
      results: [
        expect.objectContaining({
          external_account_number: 'E-1',
          status: 'ERRORED',
          kraken_identifier: null,
          latest_error: expect.objectContaining({ code: 'account_failed_validation' }),
          error_paths: ['billing_postcode'],
        }),
      ],
      next: null,
    });
    const skipped = (await accounts('status=SKIPPED')).json();
    expect(
      skipped.results.map((r: { external_account_number: string }) => r.external_account_number).sort(),
    ).toEqual(['K-1', 'K-2']);

    // More than a page: 130 more staged accounts, read back in pages of at most 100, each once, in order.
    const many = Array.from({ length: 130 }, (_, i) => `M-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < many.length; i += 10) {
      await Promise.all(many.slice(i, i + 10).map((e) => v1.stage(accountPayload(e))));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await accounts(`status=PENDING${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode).toBe(200);
      const page = res.json() as {
        results: { external_account_number: string; modified_at: string }[];
        next: string | null;
      };
      expect(page.results.length).toBeLessThanOrEqual(100);
      seen.push(...page.results.map((r) => r.external_account_number));
      const times = page.results.map((r) => r.modified_at);
      expect(times).toEqual([...times].sort());
      cursor = page.next;
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining([...many, 'S-1', 'S-2', 'L-1']));
    expect(seen).toHaveLength(many.length + 3);
  });

  it('refuses a bad status or cursor, and answers another organisation as an unknown supplier', async () => {
    const missing = await accounts('');
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([expect.objectContaining({ attr: 'status' })]);
    expect((await accounts('status=DONE')).json().errors).toEqual([
      expect.objectContaining({ attr: 'status' }),
    ]);
    const cursor = await accounts('status=PENDING&cursor=nope');
    expect(cursor.statusCode).toBe(400);
    expect(cursor.json().errors).toEqual([expect.objectContaining({ attr: 'cursor' })]);

    const other = await createTenant(t, 'Other Org', 'OTHER_SUPPLIER');
    for (const res of [await progress(other.headers), await accounts('status=PENDING', other.headers)]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('import_supplier_not_found');
    }
    const unknown = await t.app.inject({
      method: 'GET',
      url: '/v2/data-import/import-suppliers/NOPE/progress/',
      headers,
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('import_supplier_not_found');
  });
});

describe('the page’s endpoints', () => {
  it('lists the caller’s suppliers with their progress summary, and only theirs', async () => {
    await createTenant(t, 'Third Org', 'THIRD_SUPPLIER');
    await t.ops.createSupplier('ACME_SECOND', 'Acme Energía', { documentRoot: 'migrations/acme_second' });
    const res = await t.app.inject({ method: 'GET', url: '/v2/data-import/import-suppliers/', headers });
    expect(res.statusCode).toBe(200);
    const { results } = res.json() as {
      results: { import_supplier_code: string; accounts: object; creation_slots: object }[];
    };
    expect(results.map((r) => r.import_supplier_code)).toEqual([SUPPLIER, 'ACME_SECOND']);
    const body = (await progress()).json();
    expect(results[0]).toEqual({
      import_supplier_code: SUPPLIER,
      status: 'Ongoing',
      as_of: expect.any(String),
      rebuilding: body.rebuilding,
      accounts: body.accounts,
      skipped: body.skipped,
      processed_per_minute: expect.any(Object),
      eta_seconds: body.eta_seconds === null ? null : expect.any(Number),
      // The organisation's creation slots, the same in the list as in the progress body.
      creation_slots: { in_use: 0, share: 50, limit: 50, waiting: 0 },
    });
    expect(body.creation_slots).toEqual(results[0]!.creation_slots);
    expect(results[1]!.accounts).toMatchObject({ total: 0, PENDING: 0 });
  });

  it('answers processed and errored per minute over the last hour', async () => {
    const res = await t.app.inject({ method: 'GET', url: `${base}/progress/minutes/`, headers });
    expect(res.statusCode).toBe(200);
    const body = res.json() as {
      import_supplier_code: string;
      minutes: { minute: string; processed: number; errored: number }[];
    };
    expect(body.import_supplier_code).toBe(SUPPLIER);
    expect(body.minutes).toHaveLength(60);
    const times = body.minutes.map((m) => Date.parse(m.minute));
    expect(times.slice(1).every((time, i) => time - times[i]! === 60_000)).toBe(true);
    // Everything this file did happened within the hour: the four created accounts, the one validation failure.
    expect(body.minutes.reduce((n, m) => n + m.processed, 0)).toBe(4);
    expect(body.minutes.reduce((n, m) => n + m.errored, 0)).toBe(1);
    const two = await t.app.inject({ method: 'GET', url: `${base}/progress/minutes/?minutes=2`, headers });
    expect(two.json().minutes).toEqual(body.minutes.slice(-2));

    for (const bad of ['0', '61', 'x']) {
      const refused = await t.app.inject({
        method: 'GET',
        url: `${base}/progress/minutes/?minutes=${bad}`,
        headers,
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().errors).toEqual([expect.objectContaining({ attr: 'minutes' })]);
    }
    const other = await createTenant(t, 'Fourth Org');
    const hidden = await t.app.inject({
      method: 'GET',
      url: `${base}/progress/minutes/`,
      headers: other.headers,
    });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json().code).toBe('import_supplier_not_found');
  });
});
