import { afterAll, beforeAll, expect, it } from 'vitest';
import { payloadHash } from '../../src/storage/processes/import-processes.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { startHoldingProxy, type HoldingProxy } from '../support/mongo-proxy.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM } from '../creation/support.js';
import { inMs, startTaskAsWorker, v2For, type V2 } from './support.js';

// "A refused schedule changes nothing": a schedule stages its payload before its task is recorded, and a
// waiting task may start in between. Pod B's database connection goes through a proxy that holds the
// schedule's event insert (after the payload is stored), while pod A records the waiting task's start as a
// worker would. No worker runs: the task's run is written by the test.
let podA: TestApp;
let podB: TestApp;
let proxy: HoldingProxy;
let viaA: V2;
let viaB: V2;

const day = 24 * 3600 * 1000;
const later = () => ({ schedule_window_start: inMs(2 * day), schedule_window_end: inMs(3 * day) });
const withName = (external: string, name: string) => {
  const payload = { ...accountPayload(external), operations_team_name: TEAM };
  payload.customers = payload.customers.map((c, i) => (i === 0 ? { ...c, given_name: name } : c));
  return payload;
};
/** The first customer's given name in a staged payload's text. */
const givenName = (staged: { text: string } | null) =>
  staged === null
    ? null
    : (JSON.parse(staged.text) as { customers: { given_name: string }[] }).customers[0]!.given_name;

beforeAll(async () => {
  podA = await startTestApp({ env: { TEST_LABEL: 'refused' } });
  const mongo = new URL(podA.config.MONGO_URL);
  proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
  podB = await startTestApp({
    env: {
      TEST_LABEL: 'refused-b',
      MONGO_URL: proxy.url(mongo.pathname.slice(1)),
      QUEUE_PREFIX: podA.config.QUEUE_PREFIX,
    },
  });
  const { headers } = await setupTenant(podA);
  viaA = v2For(podA, headers);
  viaB = v2For(podB, headers);
});
afterAll(async () => {
  proxy?.release();
  // One database: dropped once, by pod A.
  await podB?.app.close();
  await proxy?.close();
  await podA?.close();
});

it('a schedule refused because the waiting task started in the meantime leaves the staged payload as it was, and the task creates from its own', async () => {
  const external = 'REFUSED-1';
  const key = processKey(SUPPLIER, external);
  const models = podA.app.db.models;
  const storage = podA.app.storage;
  const first = await viaA.schedule(withName(external, 'First'), later());
  expect(first.statusCode, first.body).toBe(201);
  const stagedAt = (await models.AccountImportProcess.findById(key).lean())!.stagedAt;

  // Pod B's schedule (another payload) stores its payload, then its event insert is held...
  const held = proxy.holdNext('insert', 'import_events');
  const second = viaB.schedule(withName(external, 'Second'), later());
  await held;
  // ...while the waiting task starts.
  const process = (await models.AccountImportProcess.findById(key).lean())!;
  const identity = {
    key,
    organisationId: process.organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
  };
  const started = await startTaskAsWorker(storage, identity);
  expect(started.state.status).toBe('IN_PROGRESS');
  proxy.release();

  const refused = await second;
  expect(refused.statusCode, refused.body).toBe(400);
  expect(refused.json().code).toBe('account_import_in_progress');
  // Nothing changed: the staged payload and its time are the first schedule's.
  expect(givenName(await storage.processes.loadStaged(key))).toBe('First');
  expect((await models.AccountImportProcess.findById(key).lean())!.stagedAt).toEqual(stagedAt);
  // The running task creates from the payload it was scheduled with, found by the hash its event records.
  const task = started.state.task!;
  expect(task.payloadHash).toMatch(/^[0-9a-f]{64}$/);
  expect(givenName(await storage.processes.loadStaged(key, task.payloadHash))).toBe('First');
});

it('an accepted schedule makes its payload the staged one; the payload hash stays internal', async () => {
  const external = 'REFUSED-2';
  const key = processKey(SUPPLIER, external);
  const storage = podA.app.storage;
  expect((await viaA.schedule(withName(external, 'First'), later())).statusCode).toBe(201);
  const second = withName(external, 'Second');
  const replaced = await viaB.schedule(second, later());
  expect(replaced.statusCode, replaced.body).toBe(201);

  expect(givenName(await storage.processes.loadStaged(key))).toBe('Second');
  const state = await storage.events.state(key);
  expect(state.status).toBe('PENDING');
  expect(state.task!.payloadHash).toBe(payloadHash(JSON.stringify(second)));
  // The replaced task's payload stays readable by its hash.
  const history = await storage.events.history(key);
  const firstTask = history.find((e) => e.kind === 'SCHEDULED')!;
  expect(givenName(await storage.processes.loadStaged(key, firstTask.data.payload_hash as string))).toBe(
    'First',
  );
  // Neither the status nor the events show it.
  const events = (await viaA.events(external)).json() as { data: Record<string, unknown> }[];
  expect(events.some((e) => 'payload_hash' in e.data)).toBe(false);
  expect(JSON.stringify((await viaA.status(external)).json())).not.toContain('payload_hash');
});
