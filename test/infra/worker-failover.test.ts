import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { jobCatalog } from '../../src/jobs/catalog.js';
import { startClusterService, type ClusterService } from '../support/cluster-service.js';
import { awaitNewMaster, holdersOf } from '../support/cluster-nodes.js';
import { until } from '../creation/support.js';

// The service's own workers, idle, across a SIGKILL of the Redis Cluster master that holds the webhook queue:
// once the replica has taken over, they take that queue's jobs again without anyone restarting them. (The
// failover test kills the creation queue's master under load; it once failed with the webhook queue's workers
// taking no job for minutes after the failover, stuck in a reconnect of their blocking connection that never
// ended: that cause is reproduced on its own by cluster-connect.test.ts.)
let service: ClusterService;

beforeAll(async () => {
  service = await startClusterService('worker-failover');
});
afterAll(async () => service?.stop());

it(
  "idle workers take the webhook queue's jobs again after its master is SIGKILLed",
  { timeout: 300_000 },
  async () => {
    const { cluster, t } = service;
    const queue = t.app.queues.queue('webhooks');
    const spec = jobCatalog['sweep-outbox'];
    // A sweep: harmless (it finds nothing to do), and run by whichever worker takes it.
    const add = (id: string) => queue.add('sweep-outbox', { requestId: id }, { ...spec.options, jobId: id });
    const completed = (id: string) =>
      until(async () => (await queue.getJobState(id).catch(() => null)) === 'completed', `job ${id}`, 60_000);

    await add('probe-before');
    await completed('probe-before');

    const {
      slot,
      master: victim,
      replica,
    } = await holdersOf(cluster.ports[0]!, redisKeys(t.config.QUEUE_PREFIX).queuePrefix('webhooks'));
    expect(replica, "the webhook queue master's replica").toBeDefined();

    await cluster.killNode(victim.port);
    const promoted = await awaitNewMaster(replica.port, slot, victim.id, 'the replica to take over', 60_000);
    expect(promoted.id).toBe(replica.id);

    // Added once the cluster accepts writes again (a producer connection fails fast meanwhile: tried again).
    const ids = Array.from({ length: 5 }, (_, i) => `probe-after-${i}`);
    for (const id of ids)
      await until(
        async () =>
          add(id).then(
            () => true,
            () => false,
          ),
        `adding ${id}`,
        60_000,
      );
    for (const id of ids) {
      try {
        await completed(id);
      } catch (err) {
        const counts = await queue.getJobCounts().catch((e: Error) => e.message);
        const count = await queue.getWorkersCount().catch((e: Error) => e.message);
        throw new Error(`${(err as Error).message}: queue ${JSON.stringify(counts)}, workers ${count}`, {
          cause: err,
        });
      }
    }
  },
);
