import { startTestApp, type TestApp } from './app.js';
import { startRedisCluster, type LocalCluster } from './processes.js';
import { startTestWorkers, type TestWorkers } from '../creation/support.js';

export type ClusterService = {
  cluster: LocalCluster;
  t: TestApp;
  workers: TestWorkers;
  stop: () => Promise<void>;
};

/**
 * The service on a Redis Cluster of its own (3 masters + 3 replicas), whatever Redis the rest of the suite uses:
 * a test API and in-process workers whose every Redis client is a cluster client (REDIS_CLUSTER_NODES).
 */
export async function startClusterService(label: string): Promise<ClusterService> {
  const cluster = await startRedisCluster();
  let t: TestApp | undefined;
  let workers: TestWorkers | undefined;
  const stop = async () => {
    try {
      await workers?.stop();
      await t?.close();
    } finally {
      await cluster.stop();
    }
  };
  try {
    t = await startTestApp({
      env: {
        TEST_LABEL: label,
        REDIS_CLUSTER_NODES: cluster.seeds,
        LOG_LEVEL: process.env.CLUSTER_LOGS ?? 'silent',
      },
    });
    workers = await startTestWorkers(t.config);
    return { cluster, t, workers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
