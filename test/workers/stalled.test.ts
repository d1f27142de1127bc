import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { startHoldingProxy, type HoldingProxy } from '../support/mongo-proxy.js';
import { childEnv, startProcess, type Child } from '../creation/processes.js';
import {
  accountPayload,
  setupTenant,
  startTestWorkers,
  TEAM,
  until,
  type TestWorkers,
} from '../creation/support.js';
import { eventNames, v2For, type V2 } from '../v2/support.js';

// A scheduled creation whose worker dies under it more often than the queue allows (here: once, with
// WORKER_MAX_STALLED_COUNT=0) is failed by BullMQ without its processor running again. The history must not stay
// IN_PROGRESS for good: it ends ERRORED `worker_stalled`, and the account can be scheduled again.
const WORKER_SETTINGS = {
  WORKER_LOCK_DURATION_MS: '1000',
  WORKER_STALLED_INTERVAL_MS: '300',
  WORKER_MAX_STALLED_COUNT: '0',
};
let t: TestApp;
let v2: V2;
let proxy: HoldingProxy;
let survivor: TestWorkers | undefined;
const children: Child[] = [];

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'stalled', ...WORKER_SETTINGS } });
  v2 = v2For(t, (await setupTenant(t)).headers);
  const mongo = new URL(t.config.MONGO_URL);
  proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
});
afterAll(async () => {
  for (const c of children) await c.stop('SIGKILL');
  await survivor?.stop();
  await proxy?.close();
  await t?.close();
});

it('a task failed by stalling ends ERRORED worker_stalled, and a new schedule is accepted', async () => {
  const payload = { ...accountPayload('STALL-1'), operations_team_name: TEAM };
  const first = await v2.schedule(payload);
  expect(first.statusCode, first.body).toBe(201);
  // A worker process whose database connection holds the account insert: it dies after STARTED, mid-creation.
  const held = proxy.holdNext('insert', 'accounts');
  const victim = startProcess('worker', {
    ...childEnv(t.config, WORKER_SETTINGS),
    MONGO_URL: proxy.url(new URL(t.config.MONGO_URL).pathname.slice(1)),
  });
  children.push(victim);
  await held;
  expect((await v2.status('STALL-1')).json().status).toBe('IN_PROGRESS');
  await victim.stop('SIGKILL');

  // Another worker finds the job stalled (its lock lapsed) and, past the limit, fails it.
  survivor = await startTestWorkers(t.config, ['account-creation']);
  const errored = await until(async () => {
    const body = (await v2.status('STALL-1')).json();
    return body.status === 'ERRORED' ? body : null;
  }, 'the stalled task to end ERRORED');
  expect(errored.latest_error).toMatchObject({ code: 'worker_stalled', domain: 'import_process' });
  expect(eventNames((await v2.events('STALL-1')).json())).toEqual([
    'CREATED',
    'SCHEDULED',
    'STARTED',
    'ERRORED',
  ]);

  // Not stuck: scheduled again, it is created by the surviving worker.
  expect((await v2.schedule(payload)).statusCode).toBe(201);
  await until(async () => (await v2.status('STALL-1')).json().status === 'PROCESSED', 'the new task to run');
});
