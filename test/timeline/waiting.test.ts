import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { setupTenant, startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { inMs, v2For, type V2 } from '../v2/support.js';
import { planFor, withTeam, type PlanApi } from '../cutover/support.js';
import { kindsOf, timelineFor, type TimelineApi, type TimelineBody } from './support.js';

// Why an account waits, each reason provoked for real: its window not open yet, no worker consuming the creation
// queue (the app runs without workers), its cohort paused through the plan's pause, and (workers started, a
// creation limit of 1 held) a creation slot, with how many of its organisation's tasks are ahead.
let t: TestApp;
let v2: V2;
let plan: PlanApi;
let timeline: TimelineApi;
let workers: TestWorkers | undefined;
const ORG = 'Waiting Org';

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'timeline-waiting', ACCOUNT_CREATION_CONCURRENCY: '1' } });
  const { headers } = await setupTenant(t, ORG);
  v2 = v2For(t, headers);
  plan = planFor(t, headers);
  timeline = timelineFor(t, headers);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const read = async (external: string) => {
  const res = await timeline.get(external);
  expect(res.statusCode).toBe(200);
  return res.json<TimelineBody>();
};

describe('why an account waits', () => {
  it('its window is not open yet', async () => {
    const start = inMs(3_600_000);
    expect((await v2.schedule(withTeam('TL-LATER'), { schedule_window_start: start })).statusCode).toBe(201);
    const body = await read('TL-LATER');
    expect(body.status).toBe('PENDING');
    expect(kindsOf(body.steps)).toEqual(['staged', 'scheduled']);
    expect(body.why).toMatchObject({ code: 'waiting_for_window', data: { window_start: start } });
    expect(body.why.data.seconds).toBeGreaterThan(3_500);
  });

  it('no worker consumes the creation queue: for how long', async () => {
    expect((await v2.schedule(withTeam('TL-NOWORKER'))).statusCode).toBe(201);
    const body = await until(async () => {
      const b = await read('TL-NOWORKER');
      return b.why.code === 'no_worker' && (b.why.data.seconds as number) >= 1 && b;
    }, 'a second without a worker');
    expect(body.why.detail).toMatch(/No worker is consuming the creation queue: due for \d+ s/);
    // The task is queued, so far for as long as it has been due.
    const queued = body.steps.find((s) => s.step === 'queued')!;
    expect(queued.duration_ms).toBeGreaterThanOrEqual(1_000);
    expect(kindsOf(body.steps)).toEqual(['staged', 'scheduled', 'queued']);
  });

  it('its cohort is paused (the plan’s pause), with the reason', async () => {
    expect((await plan.put({ expected_accounts: 10 })).statusCode).toBe(200);
    expect((await plan.pause({ reason: 'Waiting for the billing freeze' })).statusCode).toBe(200);
    const body = await read('TL-NOWORKER');
    expect(body.why).toMatchObject({
      code: 'cohort_paused',
      data: { reason: 'operator', pause_detail: 'Waiting for the billing freeze' },
    });
    expect(body.why.detail).toContain('Waiting for the billing freeze');
    expect(body.why.since).not.toBeNull();
    expect((await plan.resume()).statusCode).toBe(200);
    expect((await read('TL-NOWORKER')).why.code).toBe('no_worker');
  });

  it(
    'a creation slot, with how many of its organisation’s tasks are ahead; then done',
    { timeout: 60_000 },
    async () => {
      // The one slot of the limit held by another creation of the organisation.
      const org = await t.app.db.models.Organisation.findOne({ name: ORG }).lean();
      const slots = new CreationSlots(t.app.redis, t.config);
      const held = await slots.acquire('ACME_ENERGIA/TL-HOLDER', 'worker', {
        organisationId: String(org!._id),
      });
      expect(held.status).toBe('taken');
      const renew = slots.keepAlive('ACME_ENERGIA/TL-HOLDER');
      try {
        workers = await startTestWorkers(t.config);
        const waitingFor = (external: string, ahead: number) =>
          until(async () => {
            const b = await read(external);
            return b.why.code === 'waiting_for_slot' && b.why.data.ahead === ahead && b;
          }, `${external} waiting for a slot`);
        const first = await waitingFor('TL-NOWORKER', 0);
        expect(first.why.data).toMatchObject({ in_use: 1, limit: 1 });
        expect((await v2.schedule(withTeam('TL-SECOND'))).statusCode).toBe(201);
        const second = await waitingFor('TL-SECOND', 1);
        expect(second.why.detail).toContain('1 of its organisation');
      } finally {
        renew();
      }
      await slots.finish('ACME_ENERGIA/TL-HOLDER', -1);
      for (const external of ['TL-NOWORKER', 'TL-SECOND'])
        await until(async () => (await read(external)).why.code === 'done', `${external} created`);
      const done = await read('TL-SECOND');
      expect(kindsOf(done.steps)).toEqual(['staged', 'scheduled', 'queued', 'started', 'created']);
    },
  );
});
