import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { planFor, type PlanApi } from './support.js';

// The plan's projected finish on a young cohort: the rate is the run's own (its finished accounts since its older
// checkpoint, a quarter to a half of the run's age back, or since its first admission while it has none), not
// the last 5 minutes' count over 5 minutes, which projects a cohort a minute old five times too late. A run
// starts at the first admission after 5 minutes without one.
let t: TestApp;
let v1: Api;
let plan: PlanApi;
let workers: TestWorkers;
const EXPECTED = 200;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cutover-projection' } });
  const { headers } = await setupTenant(t, 'Projection Org');
  v1 = apiFor(t, headers);
  plan = planFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

/** Stages and creates the accounts, 8 at a time: when the first create answered (ms). */
async function createAll(externals: string[]): Promise<number> {
  for (const e of externals) expect((await v1.stage(accountPayload(e))).statusCode).toBe(201);
  let firstAnswer = Infinity;
  for (let i = 0; i < externals.length; i += 8) {
    const answers = await Promise.all(
      externals.slice(i, i + 8).map(async (e) => {
        const res = await v1.create(e);
        firstAnswer = Math.min(firstAnswer, Date.now());
        return res;
      }),
    );
    for (const res of answers) expect(res.statusCode).toBe(201);
  }
  return firstAnswer;
}

/** The progress body's plan once `done` accounts are counted, with when its read was sent and answered. */
async function planOnceDone(done: number) {
  return until(async () => {
    const sent = Date.now();
    const body = (await plan.progress()).json();
    const answered = Date.now();
    return body.plan?.done === done ? { plan: body.plan, sent, answered } : null;
  }, `${done} done in the progress body`);
}

/**
 * What the run's own rate allows, from the plan's Redis state read after the progress (nothing finishes in
 * between): the stretch the rate is measured over (from the older checkpoint when the run has one, else from the
 * run's start) on Redis's clock, which is this machine's, between the read's sending and its answer.
 * Projected = read time + left × stretch age / finished in it, whole seconds (±1 s).
 */
async function stateBounds(left: number, read: { sent: number; answered: number }) {
  const h = await t.app.redis.hgetall(redisKeys(t.config.QUEUE_PREFIX).plan(SUPPLIER).state);
  const fin = Number(h.processed ?? 0) + Number(h.errored ?? 0);
  const recent = Number(h.ck1_at ?? 0) >= Number(h.run_at);
  const from = recent ? Number(h.ck1_at) : Number(h.run_at);
  const finished = fin - Number((recent ? h.ck1_done : h.run_done) ?? 0);
  return {
    recent,
    earliest: read.sent + (left * (read.sent - from)) / finished - 1_000,
    latest: read.answered + (left * (read.answered - from)) / finished + 1_000,
  };
}

describe('the projected finish', () => {
  it(
    'of a cohort younger than 5 minutes is at its own rate so far (the last 5 minutes over 5 minutes: far too late)',
    { timeout: 120_000 },
    async () => {
      expect((await plan.put({ expected_accounts: EXPECTED })).statusCode).toBe(200);
      const runFrom = Date.now();
      const externals = Array.from({ length: 40 }, (_, i) => `PROJ-${i}`);
      await createAll(externals);
      const read = await planOnceDone(40);
      const left = EXPECTED - 40;
      const projected = Date.parse(read.plan.projected_finish as string);
      const { earliest, latest } = await stateBounds(left, read);
      expect(projected).toBeLessThanOrEqual(read.answered + (left * (read.answered - runFrom)) / 40 + 60_000);
      expect(projected).toBeGreaterThanOrEqual(earliest);
      expect(projected).toBeLessThanOrEqual(latest);
      // The old rule: 160 left at 40 per 5 minutes, 20 minutes from now; the run took seconds.
      const oldRule = read.sent + ((left * 5) / 40) * 60_000;
      expect(latest).toBeLessThan(read.answered + 5 * 60_000);
      expect(projected).toBeLessThan(oldRule - 10 * 60_000);
      expect(read.plan).toMatchObject({ expected_accounts: EXPECTED, done: 40, percent_done: 20 });
    },
  );

  it(
    'starts a new run at the first admission after 5 minutes without one: a rehearsal again is measured alone',
    { timeout: 120_000 },
    async () => {
      // The last run, as if it had begun 20 minutes ago and admitted its last creation 6 minutes ago.
      const state = redisKeys(t.config.QUEUE_PREFIX).plan(SUPPLIER).state;
      const redisNow = Number((await t.app.redis.time())[0]) * 1000;
      await t.app.redis.hset(state, 'run_at', redisNow - 20 * 60_000, 'admitted_at', redisNow - 6 * 60_000);
      const externals = Array.from({ length: 24 }, (_, i) => `PROJ-R-${i}`);
      await createAll(externals);
      const read = await planOnceDone(64);
      // The new run finished 24 accounts; the 40 of the first count in `done`, not in its rate.
      const { earliest, latest } = await stateBounds(EXPECTED - 64, read);
      const projected = Date.parse(read.plan.projected_finish as string);
      expect(projected).toBeGreaterThanOrEqual(earliest);
      expect(projected).toBeLessThanOrEqual(latest);
      const h = await t.app.redis.hgetall(state);
      expect(Number(h.run_done)).toBe(40);
      expect(Number(h.run_at)).toBeGreaterThan(redisNow - 1_000);
      // The new run's checkpoints are its own: none is left from the last run.
      expect(Number(h.ck2_at)).toBeGreaterThanOrEqual(Number(h.run_at));
      expect(Number(h.ck1_at) === 0 || Number(h.ck1_at) >= Number(h.run_at)).toBe(true);
      expect(Number(h.ck2_done)).toBeGreaterThanOrEqual(40);
    },
  );

  it('is at the pace of the run’s recent part, not held back by its slow start', async () => {
    // A run of 60 s that finished 24 of its 64 in its first 50 s and 40 in the last 10 s (its older checkpoint).
    const state = redisKeys(t.config.QUEUE_PREFIX).plan(SUPPLIER).state;
    const redisNow = Number((await t.app.redis.time())[0]) * 1000;
    await t.app.redis.hset(state, 'run_at', redisNow - 60_000, 'run_done', 0, 'ck1_at', redisNow - 10_000);
    await t.app.redis.hset(state, 'ck1_done', 24, 'ck2_at', redisNow, 'ck2_done', 64);
    const sent = Date.now();
    const body = (await plan.progress()).json();
    const answered = Date.now();
    const left = EXPECTED - 64;
    const projected = Date.parse(body.plan.projected_finish as string);
    // 40 in ~10 s: 136 left in ~34 s; the whole run's pace (64 a minute) would say ~127 s.
    expect(projected).toBeGreaterThanOrEqual(sent + (left * 10_000) / 40 - 2_000);
    expect(projected).toBeLessThanOrEqual(
      answered + (left * (10_000 + answered - sent + 1_000)) / 40 + 2_000,
    );
    expect(projected).toBeLessThan(sent + 90_000);
  });
});
