import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workerConnection, type RedisClient } from '../../src/infra/redis.js';
import { withTimeout } from '../../src/infra/timeout.js';
import { startRedisCluster, type LocalCluster } from '../support/processes.js';
import { clusterNodes } from '../support/cluster-nodes.js';
import { until } from '../creation/support.js';

// A Cluster client's `connect()` made while the cluster cannot serve every slot (CLUSTER INFO: cluster_state:fail,
// as during a failover) settles once the cluster serves them again. ioredis's own promise stays pending for good
// there (its ready check fails, the client reconnects by itself and becomes ready, the promise is forgotten), and
// BullMQ awaits that promise when it reconnects a worker's blocking connection: the worker then took no job again.
// A master and its replica both SIGKILLed keep the cluster failing until they are started again.
let cluster: LocalCluster;
const clients: RedisClient[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster?.stop();
});

async function clusterState(port: number): Promise<string> {
  const node = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await node.connect();
    return /cluster_state:(\w+)/.exec(String(await node.cluster('INFO')))![1]!;
  } finally {
    node.disconnect();
  }
}

it(
  'a connect() made while the cluster fails settles once it serves every slot again',
  { timeout: 180_000 },
  async () => {
    const client = workerConnection({
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.ports.map((port) => ({ host: '127.0.0.1', port })),
    });
    clients.push(client);
    client.on('error', () => undefined);
    expect(await client.ping()).toBe('PONG');
    // BullMQ's duplicates (its workers' blocking connections) are the ones it reconnects.
    const duplicate = client.duplicate();
    clients.push(duplicate);
    duplicate.on('error', () => undefined);
    expect(await duplicate.ping()).toBe('PONG');

    const nodes = await clusterNodes(cluster.ports[0]!);
    const master = nodes.find((n) => n.flags.includes('master'))!;
    const replica = nodes.find((n) => n.master === master.id)!;
    const survivor = nodes.find((n) => n.id !== master.id && n.id !== replica.id)!;
    await cluster.killNode(master.port);
    await cluster.killNode(replica.port);
    await until(async () => (await clusterState(survivor.port)) === 'fail', 'the cluster to fail', 60_000);

    duplicate.disconnect();
    await until(async () => ['end', 'close'].includes(duplicate.status), 'the disconnect', 30_000);
    let outcome = 'pending';
    // Heard as the event, not polled: the status may be 'reconnecting' only between two polls.
    const failedCheck = new Promise((resolve) => duplicate.once('reconnecting', resolve));
    const connecting = duplicate.connect().then(
      () => (outcome = 'connected'),
      (err: Error) => (outcome = `failed: ${err.message}`),
    );
    // Its ready check fails at least once: the client goes back to connecting by itself.
    await withTimeout(failedCheck, 30_000);
    expect(outcome).toBe('pending');

    await cluster.startNode(master.port);
    await cluster.startNode(replica.port);
    await until(async () => (await clusterState(survivor.port)) === 'ok', 'the cluster to recover', 60_000);
    await until(async () => outcome !== 'pending', 'the connect() to settle', 30_000);
    await connecting;
    expect(outcome).toBe('connected');
    expect(duplicate.status).toBe('ready');
    expect(await duplicate.ping()).toBe('PONG');
  },
);
