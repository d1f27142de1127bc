import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { startClusterService, type ClusterService } from '../support/cluster-service.js';
import { clusterNodes, keySlot, serves } from '../support/cluster-nodes.js';
import { accountPayload, apiFor, setupTenant, type Api } from '../creation/support.js';

// The service on a real Redis Cluster (3 masters + 3 replicas, scripts/redis-cluster.sh), whatever Redis the rest
// of the suite uses: every Redis client of the API and the workers is a cluster client (REDIS_CLUSTER_NODES).
let service: ClusterService;
let api: Api;

beforeAll(async () => {
  service = await startClusterService('cluster');
  api = apiFor(service.t, (await setupTenant(service.t)).headers);
});
afterAll(async () => service?.stop());

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
    const { cluster, t } = service;
    const prefix = t.config.QUEUE_PREFIX;
    const creation = redisKeys(prefix).queuePrefix('account-creation');
    // Which master holds each hash tag's keys. Where the tags land is the hash of a random prefix (all of them
    // on one master is a chance of about 1 in 80), so the test checks the tags and the routing, not a spread.
    const mastersOfTag = new Map<string, Set<number>>();
    const nodes = (await clusterNodes(cluster.ports[0]!)).filter(
      (n) => n.flags.includes('master') && !n.flags.includes('fail'),
    );
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
    for (const [tag, ports] of mastersOfTag) {
      const slot = await keySlot(cluster.ports[0]!, tag);
      const owner = nodes.find((n) => serves(n, slot));
      expect([...ports], tag).toEqual([owner!.port]);
    }
  });
});
