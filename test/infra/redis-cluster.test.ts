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
  it('stages and creates accounts; each queue has its own hash tag, on the master that serves its slot', async () => {
    const externals = Array.from({ length: 5 }, (_, i) => `CLUSTER-${i}`);
    for (const ext of externals) expect((await api.stage(accountPayload(ext))).statusCode).toBe(201);
    for (const ext of externals) {
      const res = await api.create(ext);
      expect(res.statusCode, res.body).toBe(201);
    }
    const prefix = t.config.QUEUE_PREFIX;
    const creation = redisKeys(prefix).queuePrefix('account-creation');
    // Which master holds each hash tag's keys. Where the tags land is the hash of a random prefix (all of them
    // on one master is a chance of about 1 in 80), so the test checks the tags and the routing, not a spread.
    const mastersOfTag = new Map<string, Set<number>>();
    const nodes = await masters();
    for (const { port } of nodes)
      for (const key of await keysOn(port, `{${prefix}:*`)) {
        const tag = key.slice(0, key.indexOf('}') + 1);
        mastersOfTag.set(tag, (mastersOfTag.get(tag) ?? new Set()).add(port));
      }
    // The creation queue (jobs and slots) and the other queues each have a tag of their own.
    expect([...mastersOfTag.keys()]).toContain(creation);
    expect(mastersOfTag.has(redisKeys(prefix).queuePrefix('webhooks'))).toBe(true);
    expect(mastersOfTag.size).toBeGreaterThanOrEqual(3);
    // Each tag's keys are on one master: the one whose slot ranges hold the tag's slot.
    const probe = new Redis(cluster.ports[0]!, '127.0.0.1');
    try {
      for (const [tag, ports] of mastersOfTag) {
        const slot = Number(await probe.cluster('KEYSLOT', tag));
        const owner = nodes.find(({ slots }) =>
          slots.some((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return slot >= from! && slot <= to!;
          }),
        );
        expect([...ports], tag).toEqual([owner!.port]);
      }
    } finally {
      probe.disconnect();
    }
  });
});
