import { Redis, Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  startRedisCluster,
  startRedisServer,
  type LocalCluster,
  type LocalServer,
} from '../support/processes.js';
import { awaitNewMaster, holdersOf } from '../support/cluster-nodes.js';
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
import { v2For, type V2 } from '../v2/support.js';

// Cohort progress is derived from the database and heals by itself after Redis loses what it held. Each test
// file here has a Redis of its own (a flush or a kill must not touch other files' data): one redis-server on
// the single-machine leg, a Redis Cluster of its own on the scaled leg (TEST_REDIS=cluster), where the fault
// is the SIGKILL of the master holding the supplier's progress keys.
const onCluster = process.env.TEST_REDIS === 'cluster';

let server: LocalServer | undefined;
let cluster: LocalCluster | undefined;
let t: TestApp;
let workers: TestWorkers;
let v1: Api;
let v2: V2;
let headers: Record<string, string>;

const settings = { PROGRESS_CHECK_INTERVAL_MS: '500', MONGO_SERVER_SELECTION_TIMEOUT_MS: '15000' };
/** What the API logs (warnings and up). */
const logged: { msg?: string; update?: string }[] = [];
const logStream = { write: (line: string) => void logged.push(JSON.parse(line) as (typeof logged)[number]) };

beforeAll(async () => {
  if (onCluster) cluster = await startRedisCluster();
  else server = await startRedisServer();
  t = await startTestApp({
    env: {
      TEST_LABEL: 'healing',
      ...(cluster
        ? { REDIS_CLUSTER_NODES: cluster.seeds }
        : { REDIS_URL: server!.url, REDIS_CLUSTER_NODES: '' }),
      ...settings,
      LOG_LEVEL: 'warn',
    },
    logStream,
  });
  headers = (await setupTenant(t)).headers;
  v1 = apiFor(t, headers);
  v2 = v2For(t, headers);
  workers = await startTestWorkers({ ...t.config, LOG_LEVEL: 'silent' });
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
  await server?.stop();
  await cluster?.stop();
});

const base = () => redisKeys(t.config.QUEUE_PREFIX).progress(SUPPLIER);
const progress = async () =>
  (
    await t.app.inject({
      method: 'GET',
      url: `/v2/data-import/import-suppliers/${SUPPLIER}/progress/`,
      headers,
    })
  ).json() as {
    rebuilding: boolean;
    accounts: Record<string, number>;
    post_import: Record<string, number>;
    failures: unknown[];
  };

/** Every account's v2 status as the per-account endpoint answers it, tallied (with the total). */
async function truth(externals: readonly string[]) {
  const counts: Record<string, number> = { total: 0 };
  for (const e of externals) {
    const res = await v2.status(e);
    expect(res.statusCode).toBe(200);
    const status = (res.json() as { status: string }).status;
    counts[status] = (counts[status] ?? 0) + 1;
    counts.total!++;
  }
  return counts;
}
const nonZero = (accounts: Record<string, number>) =>
  Object.fromEntries(Object.entries(accounts).filter(([, v]) => v > 0));

/** Waits until the progress body is settled and equals the per-account truth; returns how long it took. */
async function healed(externals: readonly string[], notes: number, timeoutMs = 60_000) {
  const from = Date.now();
  const expected = await truth(externals);
  await until(
    async () => {
      const body = await progress();
      return (
        !body.rebuilding &&
        JSON.stringify(nonZero(body.accounts)) === JSON.stringify(nonZero(sorted(body.accounts, expected))) &&
        body.post_import.notes === notes
      );
    },
    `counts equal to the per-account statuses ${JSON.stringify(expected)}`,
    timeoutMs,
  );
  return Date.now() - from;
}
/** `expected` with its keys in the order of `like` (for a comparison of the JSON texts). */
const sorted = (like: Record<string, number>, expected: Record<string, number>) =>
  Object.fromEntries(Object.keys({ ...like, ...expected }).map((k) => [k, expected[k] ?? 0]));

/** Creates an account through v1, sending the create again while Redis is away or lost its job. */
async function createOnce(external: string) {
  await until(
    async () => [200, 201].includes((await v1.stage(accountPayload(external))).statusCode),
    `${external} staged`,
  );
  await until(async () => {
    const res = await v1.create(external);
    if (res.statusCode === 201) return true;
    const status = await v2.status(external);
    return status.statusCode === 200 && (status.json() as { status: string }).status === 'PROCESSED';
  }, `${external} created`);
}

const note = (external: string, body: string) =>
  v1.postImport(external, 'notes/create/', {
    notes: [{ body, created_at: '2025-06-01T09:15:00Z' }],
  });

/** Loses what Redis holds of the supplier: FLUSHALL on one Redis; on the cluster, SIGKILL of its master. */
async function loseRedis(): Promise<string> {
  if (!cluster) {
    const redis = new Redis(server!.url);
    await redis.flushall();
    redis.disconnect();
    return 'FLUSHALL';
  }
  const { slot, master, replica } = await holdersOf(cluster.ports[0]!, base());
  await cluster.killNode(master.port);
  await awaitNewMaster(replica.port, slot, master.id, 'the replica to take over the progress slot', 120_000);
  return `SIGKILL of :${master.port} (slot ${slot}), :${replica.port} promoted`;
}

describe('cohort progress under faults', () => {
  const externals: string[] = [];
  let notes = 0;

  it('comes back to the per-account truth by itself after Redis lost what it held', async () => {
    // The case: 4 created, 1 staged; then the fault; then a create after it.
    for (const e of ['H-1', 'H-2', 'H-3', 'H-4']) {
      await createOnce(e);
      externals.push(e);
    }
    expect((await v1.stage(accountPayload('H-5'))).statusCode).toBe(201);
    externals.push('H-5');
    expect((await note('H-1', 'Welcome call done.')).statusCode).toBe(201);
    notes++;
    await healed(externals, notes);

    // Mid-cohort: 16 more accounts created 4 at a time, the fault once 4 of them are done.
    const cohort = Array.from({ length: 16 }, (_, i) => `M-${i}`);
    let done = 0;
    let fault = '';
    const faulted = (async () => {
      await until(async () => done >= 4, '4 accounts of the cohort created');
      fault = await loseRedis();
    })();
    for (let i = 0; i < cohort.length; i += 4) {
      await Promise.all(
        cohort.slice(i, i + 4).map(async (e) => {
          await createOnce(e);
          done++;
        }),
      );
    }
    await faulted;
    // A create after the fault, as in the case.
    await createOnce('H-6');
    externals.push(...cohort, 'H-6');
    const body = await progress();
    // Never the partial figures shown as settled.
    if (body.accounts.total !== externals.length) expect(body.rebuilding).toBe(true);
    const ms = await healed(externals, notes);
    console.info(
      `progress healed ${ms} ms after the cohort's last change (${fault} after 4 of 16 accounts; no operator step)`,
    );
  });

  it('keeps what it holds bounded: no field at 0, no record of the events counted', async () => {
    // An account that fails validation at creation, is put right and created: its failure's fields go.
    expect((await v1.stage({ ...accountPayload('H-7'), billing_postcode: 'ABC' })).statusCode).toBe(400);
    expect((await v1.stage(accountPayload('H-7'))).statusCode).toBe(201);
    await createOnce('H-7');
    externals.push('H-7');
    for (let i = 0; i < 3; i++) expect((await note('H-7', `Note ${i}`)).statusCode).toBe(201);
    notes += 3;
    await healed(externals, notes);
    expect((await t.ops.rebuildProgress(SUPPLIER)).drifted).toBe(false);

    const redis: Redis | Cluster = t.app.redis;
    const epoch = await redis.hget(`${base()}:meta`, 'cur');
    const counts = await redis.hgetall(`${base()}:${epoch}:counts`);
    expect(Object.entries(counts).filter(([, v]) => Number(v) <= 0)).toEqual([]);
    expect(await redis.exists(`${base()}:${epoch}:posted`, `${base()}:posted`)).toBe(0);
    expect(await redis.zcard(`${base()}:pending`)).toBe(0);
    // The epoch replaced by the rebuild is gone.
    expect(
      await redis.exists(`${base()}:${Number(epoch) - 1}:idx`, `${base()}:${Number(epoch) - 1}:counts`),
    ).toBe(0);
  });

  it('rebuilds an active cohort without losing a change or moving a count backwards', async () => {
    const burst = Array.from({ length: 24 }, (_, i) => `A-${i}`);
    let done = false;
    const seen: { processed: number; notes: number }[] = [];
    const sampler = (async () => {
      while (!done) {
        const body = await progress();
        seen.push({ processed: body.accounts.PROCESSED ?? 0, notes: body.post_import.notes ?? 0 });
      }
    })();
    const rebuilds: number[] = [];
    const rebuilder = (async () => {
      while (!done) rebuilds.push((await t.ops.rebuildProgress(SUPPLIER)).processes);
    })();
    for (let i = 0; i < burst.length; i += 4) {
      await Promise.all(
        burst.slice(i, i + 4).map(async (e) => {
          await createOnce(e);
          expect((await note(e, 'Moved in.')).statusCode).toBe(201);
        }),
      );
    }
    done = true;
    await Promise.all([sampler, rebuilder]);
    externals.push(...burst);
    notes += burst.length;
    expect(rebuilds.length).toBeGreaterThan(0);
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]!.processed, `PROCESSED at sample ${i}`).toBeGreaterThanOrEqual(seen[i - 1]!.processed);
      expect(seen[i]!.notes, `notes at sample ${i}`).toBeGreaterThanOrEqual(seen[i - 1]!.notes);
    }
    // Exact at once: no later change is needed to make it good.
    const body = await progress();
    expect(body.accounts.PROCESSED).toBe((await truth(externals)).PROCESSED);
    expect(body.post_import.notes).toBe(notes);
  });

  it('logs and counts a counter update that failed, and heals once Redis answers again', async () => {
    // Redis away while an account is staged (the stage itself needs only the database).
    const redis = t.app.redis;
    if (cluster) {
      // The pod's connection to the cluster cut (as a network partition would).
      redis.disconnect();
      try {
        expect((await v1.stage(accountPayload('H-8'))).statusCode).toBe(201);
      } finally {
        await (redis as Cluster).connect();
      }
    } else {
      const port = server!.port;
      await server!.stop('SIGKILL');
      expect((await v1.stage(accountPayload('H-8'))).statusCode).toBe(201);
      server = await startRedisServer(port);
      await until(async () => (await redis.ping().catch(() => null)) === 'PONG', 'Redis back');
    }
    externals.push('H-8');
    const failures = logged.filter((l) => l.msg?.startsWith('progress counter update failed'));
    expect(failures.length, 'failed updates logged once per burst').toBe(1);
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    const failed = /^progress_counter_failures_total (\d+)/m.exec(metrics.body);
    expect(Number(failed?.[1] ?? 0)).toBeGreaterThan(0);
    await healed(externals, notes);
  });

  it('after the whole cohort, every account created exactly once', async () => {
    const { Account } = t.app.db.models;
    const perAccount = await Account.aggregate<{ _id: string; n: number }>([
      { $match: { importSupplier: SUPPLIER } },
      { $group: { _id: '$externalAccountNumber', n: { $sum: 1 } } },
    ]);
    const created = (await truth(externals)).PROCESSED;
    expect(perAccount.filter((a) => a.n !== 1)).toEqual([]);
    expect(perAccount).toHaveLength(created!);
  });
});
