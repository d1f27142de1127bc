import { afterAll, beforeAll, expect, it } from 'vitest';
import { producerConnection, workerConnection, type RedisClient } from '../../src/infra/redis.js';
import { startRedisCluster, type LocalCluster } from '../support/processes.js';
import { awaitNewMaster, holdersOf } from '../support/cluster-nodes.js';
import { until } from '../creation/support.js';

// What a service connection does with a slot whose master died, once its replica has taken over: the commands
// it sends there reach the new master, whatever the client had read of the slot map before. Nothing else in
// this test makes the clients read the map again (no MOVED: the dead master never answers), so only their
// periodic read (`slotsRefreshInterval`) can take them there. Without it, the worker connection (which never
// gives up on a command, as BullMQ's workers need) held the command for good, neither sent nor failed.
let cluster: LocalCluster;
const clients: RedisClient[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster?.stop();
});

it(
  'a worker and a producer connection reach the new master of a slot whose master was SIGKILLed',
  { timeout: 120_000 },
  async () => {
    const settings = {
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.seeds.split(',').map((s) => {
        const [host, port] = s.split(':');
        return { host: host!, port: Number(port) };
      }),
    };
    const worker = workerConnection(settings);
    const producer = producerConnection(settings);
    clients.push(worker, producer);
    const key = 'slot-refresh-probe';
    const { slot, master: victim, replica } = await holdersOf(cluster.ports[0]!, key);
    // Both have read the slot map and sent to the victim (a producer connection refuses commands until ready).
    await until(async () => producer.status === 'ready', 'the producer connection to be ready', 30_000);
    await worker.set(key, 'before');
    expect(await producer.get(key)).toBe('before');

    await cluster.killNode(victim.port);
    // Sent while the slot's master is dead: the worker connection keeps it until it can send it somewhere.
    const held = worker.set(key, 'after');
    held.catch(() => undefined);
    const promoted = await awaitNewMaster(
      replica.port,
      slot,
      victim.id,
      'the replica to take over the slot',
      60_000,
    );
    expect(promoted.id).toBe(replica.id);

    // The held command is let go: sent again to the new master, or failed once ioredis has tried it often
    // enough (a failover slower than its 16 tries); either way the caller hears, as BullMQ needs to go on.
    let settled = false;
    const outcome = held.then(
      (reply) => reply,
      (err: Error) => err.message,
    );
    void outcome.then(() => (settled = true));
    await until(async () => settled, 'the held command to be let go', 30_000);
    expect(await outcome).toMatch(/^OK$|Too many Cluster redirections/);
    // Then both connections reach the new master (a producer's commands fail fast meanwhile: tried again).
    await until(async () => (await worker.set(key, 'after').catch(() => null)) === 'OK', 'a write', 30_000);
    const seen = await until(
      async () => producer.get(key).catch(() => null),
      "the producer connection to read the new master's value",
      30_000,
    );
    expect(seen).toBe('after');
    expect(await worker.get(key)).toBe('after');
  },
);
