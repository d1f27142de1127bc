import { afterAll, beforeAll, expect, it } from 'vitest';
import { processKey } from '../../src/storage/processes/process-key.js';
import { onFinish } from '../../src/domain/import-process/state.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM } from '../creation/support.js';
import { inMs, startTaskAsWorker, v2For, type V2 } from './support.js';

// Two API pods on one database, each with its own cache of process heads. A refusal must never be decided on a
// head another pod has moved on from (no worker runs here: the task's run is written as a worker would write it).
let podA: TestApp;
let podB: TestApp;
let viaA: V2;
let viaB: V2;

beforeAll(async () => {
  podA = await startTestApp({ env: { TEST_LABEL: 'pods' } });
  podB = await startTestApp({
    env: { TEST_LABEL: 'pods-b', MONGO_URL: podA.config.MONGO_URL, QUEUE_PREFIX: podA.config.QUEUE_PREFIX },
  });
  const { headers } = await setupTenant(podA);
  viaA = v2For(podA, headers);
  viaB = v2For(podB, headers);
});
afterAll(async () => {
  // One database: dropped once, by pod A.
  await podB?.app.close();
  await podA?.close();
});

it('a cancel through pod A after the task ended ERRORED and was scheduled again through pod B is accepted', async () => {
  const external = 'PODS-1';
  const key = processKey(SUPPLIER, external);
  const withTeam = { ...accountPayload(external), operations_team_name: TEAM };
  // A window days away: the task stays PENDING until the test moves it.
  const day = 24 * 3600 * 1000;
  const later = { schedule_window_start: inMs(2 * day), schedule_window_end: inMs(3 * day) };
  const first = await viaA.schedule(withTeam, later);
  expect(first.statusCode, first.body).toBe(201);
  const identity = {
    key,
    organisationId: (await podA.app.db.models.AccountImportProcess.findById(key).lean())!.organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
  };
  // Pod A sees the task start (it caches IN_PROGRESS)...
  const started = await startTaskAsWorker(podA.app.storage, identity);
  expect(started.state.status).toBe('IN_PROGRESS');
  // ...pod B (a worker's view) records the run ERRORED, and the account is scheduled again through pod B.
  const eventsB = podB.app.storage.events;
  const error = { code: 'internal_error', detail: 'The run failed.', domain: 'import_process' };
  await eventsB.append(
    identity,
    (state) => ({ event: onFinish(state, 'run-1', { kind: 'ERRORED', error }), result: null }),
    new Date(),
  );
  expect((await viaB.schedule(withTeam, later)).statusCode).toBe(201);
  expect((await viaB.status(external)).json().status).toBe('PENDING');

  // The cancel reaches pod A, whose cached head still says IN_PROGRESS.
  const cancelled = await viaA.cancel(external);
  expect(cancelled.statusCode, cancelled.body).toBe(200);
  expect(cancelled.json().status).toBe('CANCELLED');
  expect((await viaB.status(external)).json().status).toBe('CANCELLED');
});
