import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { startRedisCluster, type LocalCluster } from '../support/processes.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  type Api,
  type TestWorkers,
} from '../creation/support.js';

// The service on a real Redis Cluster (3 masters + 3 replicas, scripts/redis-cluster.sh), whatever Redis the rest
// of the suite uses: every Redis client of the API and the workers is a cluster client (REDIS_CLUSTER_NODES).
let cluster: LocalCluster;
let t: TestApp;
let api: Api;
let workers: TestWorkers;

beforeAll(async () => {
  cluster = await startRedisCluster();
  t = await startTestApp({
    env: {
      TEST_LABEL: 'cluster',
      REDIS_CLUSTER_NODES: cluster.seeds,
      LOG_LEVEL: process.env.CLUSTER_LOGS ?? 'silent',
    },
  });
  api = apiFor(t, (await setupTenant(t)).headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  try {
    await workers?.stop();
    await t?.close();
  } finally {
    await cluster?.stop();
  }
});

/** The masters of the cluster, each with the slot ranges it serves, read from one node. */
async function masters(): Promise<Array<{ port: number; nodeId: string; slots: string[] }>> {
  const probe = new Redis(cluster.ports[0]!, '127.0.0.1');
  try {
    const lines = String(await probe.cluster('NODES'))
      .trim()
      .split('\n');
    return lines
      .map((line) => line.split(' '))
      .filter((f) => f[2]!.includes('master') && !f[2]!.includes('fail') && f.length > 8)
      .map((f) => ({ port: Number(f[1]!.split(':')[1]!.split('@')[0]), nodeId: f[0]!, slots: f.slice(8) }));
  } finally {
    probe.disconnect();
  }
}

async function keysOn(port: number, pattern: string): Promise<string[]> {
  const node = new Redis(port, '127.0.0.1');
  try {
    return await node.keys(pattern);
  } finally {
    node.disconnect();
  }
}

describe('on a Redis Cluster', () => {
  it('stages and creates accounts; each queue has its own hash tag, so the queues spread over the masters', async () => {
    const externals = Array.from({ length: 5 }, (_, i) => `CLUSTER-${i}`);
    for (const ext of externals) expect((await api.stage(accountPayload(ext))).statusCode).toBe(201);
    for (const ext of externals) {
      const res = await api.create(ext);
      expect(res.statusCode, res.body).toBe(201);
    }
    const creation = redisKeys(t.config.QUEUE_PREFIX).queuePrefix('account-creation');
    const holders = new Map<number, string[]>();
    for (const { port } of await masters())
      holders.set(port, await keysOn(port, `{${t.config.QUEUE_PREFIX}:*`));
    // The creation queue's keys (jobs, slots) are all on one master; other queues' keys elsewhere too.
    const withCreation = [...holders].filter(([, keys]) => keys.some((k) => k.startsWith(creation)));
    expect(withCreation).toHaveLength(1);
    expect([...holders.values()].filter((keys) => keys.length > 0).length).toBeGreaterThan(1);
  });
});
