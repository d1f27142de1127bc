import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, startRedisServer, type LocalServer } from '../support/processes.js';
import {
  accountPayload,
  apiFor,
  recordCounts,
  setupTenant,
  startTestWorkers,
  until,
  type Api,
  type TestWorkers,
} from './support.js';

// Redis of its own, stopped in the middle of creates and started again on the same port.
let redis: LocalServer;
let t: TestApp;
let api: Api;
let workers: TestWorkers;

beforeAll(async () => {
  redis = await startRedisServer(await freePort());
  t = await startTestApp({
    env: {
      TEST_LABEL: 'outage',
      // Its own single redis-server, stopped and started again (also in a run on a Redis Cluster).
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: '',
      ACCOUNT_CREATION_WAIT_MS: '20000',
    },
  });
  api = apiFor(t, (await setupTenant(t)).headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
  await redis?.stop();
});

it(
  'answers fast 503s while Redis is down, then proceeds without restarting anything and loses no staged data',
  { timeout: 300_000 },
  async () => {
    const externals = Array.from({ length: 10 }, (_, i) => `OUT-${i}`);
    for (const ext of externals) expect((await api.stage(accountPayload(ext))).statusCode).toBe(201);
    expect((await api.create('OUT-0')).statusCode).toBe(201);

    // Creates in flight when Redis goes away, and creates sent while it is away.
    const inFlight = externals.slice(1, 5).map((ext) => {
      const started = Date.now();
      return api.create(ext).then((res) => ({ ext, res, ms: Date.now() - started }));
    });
    await redis.stop();
    const during: Array<{ res: LightMyRequestResponse; ms: number }> = [];
    for (const ext of externals.slice(5)) {
      const started = Date.now();
      during.push({ res: await api.create(ext), ms: Date.now() - started });
    }
    for (const { res, ms } of during) {
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBeDefined();
      expect(ms).toBeLessThan(3_000);
    }
    for (const { res, ms } of await Promise.all(inFlight)) {
      // Either finished before the outage, or answered 503 quickly: never a hang until the 20 s wait.
      expect([201, 503]).toContain(res.statusCode);
      expect(ms).toBeLessThan(5_000);
    }
    // Staging and reads do not need Redis.
    expect((await api.stage(accountPayload('OUT-LATE'))).statusCode).toBe(201);
    expect((await api.status('OUT-9')).json()).toEqual({ status: 'UNKNOWN', kraken_account_number: '' });

    redis = await startRedisServer(redis.port);
    // Same processes, same connections (they reconnect on their own): every account gets created on retry.
    for (const ext of [...externals, 'OUT-LATE']) {
      await until(
        async () => {
          const res = await api.create(ext);
          return res.statusCode === 201 || res.json().code === 'account_import_process_already_imported';
        },
        `account ${ext} to be created after the outage`,
        30_000,
      );
      expect(await recordCounts(t.app, ext)).toMatchObject({ accounts: 1, ledgers: 2 });
    }
    expect(
      await t.app.db.models.AccountImportProcess.countDocuments({ krakenAccountNumber: { $ne: null } }),
    ).toBe(11);
  },
);
