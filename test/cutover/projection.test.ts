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

// The plan's projected finish on a young cohort: the rate is the run's own (its finished accounts over the time
// since its first admission), not the last 5 minutes' count over 5 minutes, which projects a cohort a minute old
// five times too late. A run starts at the first admission after 5 minutes without one.
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
 * What the run's own rate allows: the run began after `runFrom` (before its first admission) and before
 * `firstAnswer` (its first create answered); it finished `finished` accounts; `read` is the read's timing.
 * Projected = read time + left × run age / finished, whole seconds (±1 s).
 */
function runBounds(
  runFrom: number,
  firstAnswer: number,
  finished: number,
  left: number,
  read: { sent: number; answered: number },
) {
  return {
    earliest: read.sent + (left * (read.sent - firstAnswer)) / finished - 1_000,
    latest: read.answered + (left * (read.answered - runFrom)) / finished + 1_000,
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
      const firstAnswer = await createAll(externals);
      const read = await planOnceDone(40);
      const left = EXPECTED - 40;
      const projected = Date.parse(read.plan.projected_finish as string);
      const { earliest, latest } = runBounds(runFrom, firstAnswer, 40, left, read);
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
      const runFrom = Date.now();
      const externals = Array.from({ length: 24 }, (_, i) => `PROJ-R-${i}`);
      const firstAnswer = await createAll(externals);
      const read = await planOnceDone(64);
      // The new run finished 24 accounts; the 40 of the first count in `done`, not in its rate.
      const { earliest, latest } = runBounds(runFrom, firstAnswer, 24, EXPECTED - 64, read);
      const projected = Date.parse(read.plan.projected_finish as string);
      expect(projected).toBeGreaterThanOrEqual(earliest);
      expect(projected).toBeLessThanOrEqual(latest);
      expect(Number(await t.app.redis.hget(state, 'run_done'))).toBe(40);
      expect(Number(await t.app.redis.hget(state, 'run_at'))).toBeGreaterThan(redisNow - 1_000);
    },
  );
});
