import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { childEnv, startProcess, type Child } from '../../test/creation/processes.js';
import {
  freePort,
  startFerretDb,
  startRedisCluster,
  startRedisServer,
  waitForPort,
  type LocalServer,
} from '../../test/support/processes.js';
import { createPgDatabase, PG_URL, startFerretDbOnPostgres } from '../../test/support/postgres.js';
import { pidsListeningOn, postgresCpuSeconds, startHaproxy, tierMeter } from '../capacity-env.js';
import { creationEnv, httpCreationClient, pool } from '../creation-env.js';
import { benchConfig, processCpuSeconds, round, type Scenario } from '../support.js';

const ACCOUNTS = Number(process.env.BENCH_CAPACITY_ACCOUNTS ?? 1000);
const BACKENDS = (process.env.BENCH_CAPACITY_BACKENDS ?? 'sqlite,postgresql').split(',').map((s) => s.trim());
const QUEUE_JOBS = Number(process.env.BENCH_QUEUE_JOBS ?? 20_000);
const LIMIT = 50;
/** BENCH_CAPACITY_SCALED_ONLY=1: only the single-machine default and the scaled topology. */
const SCALED_ONLY = process.env.BENCH_CAPACITY_SCALED_ONLY === '1';
const WARM_UP = 100;
const CORES = availableParallelism();

type Backend = 'sqlite' | 'postgresql';
type Shape = { webs: number; workers: number };
/** The scaled topology (`up.sh --scaled`): a Redis Cluster of 3 masters + 3 replicas and HAProxy in front of the webs. */
type Extras = { cluster?: boolean; balancer?: boolean };

/**
 * The capacity model's inputs, measured: CPU milliseconds per realistic account (stage + create over HTTP)
 * for every tier (web, worker, FerretDB, PostgreSQL or SQLite inside FerretDB, Redis, and the load
 * generator) on both database backends, with 1 web + 1 worker and with 2 webs + 2 workers (the same 50
 * accounts in flight, round-robin over the webs, as a load balancer would), and the ceiling of one BullMQ
 * queue on one Redis (no-op jobs). On the PostgreSQL backend every web and worker has a FerretDB of its own
 * (a sidecar), all on one PostgreSQL database; on SQLite they share one FerretDB (one file).
 * The model: on a machine whose cores all tiers share, accounts/s ≈ cores × 1000 / (sum of the tiers' CPU
 * ms per account); it is checked against the 2 + 2 run. Last, the whole scaled topology (`up.sh --scaled`:
 * Redis Cluster, PostgreSQL with a FerretDB per pod, 2 webs + 2 workers, HAProxy in front) against the
 * single-machine default (SQLite, one Redis, 1 web + 1 worker) of the same run.
 */
const scenario: Scenario = {
  name: 'capacity',
  description:
    `CPU ms per realistic account per tier (web, worker, FerretDB, PostgreSQL, Redis, load generator) for ` +
    `stage + create of ${ACCOUNTS} accounts with 1 web + 1 worker and 2 webs + 2 workers, on ` +
    `${BACKENDS.join(' and ')}; the model's prediction against the 2 + 2 run; one BullMQ queue's ceiling ` +
    `(${QUEUE_JOBS} no-op jobs) on one Redis`,
  async run() {
    const results: Record<string, unknown> = { cores: CORES, accounts: ACCOUNTS, in_flight: LIMIT };
    for (const backend of (SCALED_ONLY ? ['sqlite'] : BACKENDS) as Backend[]) {
      const one = await runTopology(backend, { webs: 1, workers: 1 });
      if (SCALED_ONLY) {
        results[backend] = { one_web_one_worker: one };
        continue;
      }
      const two = await runTopology(backend, { webs: 2, workers: 2 });
      const predicted = round((CORES * 1000) / one.cpu_ms_total, 1);
      results[backend] = {
        one_web_one_worker: one,
        two_webs_two_workers: two,
        model: {
          /** From the 1 + 1 run's CPU per account: what splitting into more processes would give for free. */
          predicted_accounts_per_s: predicted,
          measured_two_by_two: two.accounts_per_s,
          error_pct: round(((two.accounts_per_s - predicted) / predicted) * 100, 1),
          /**
           * From the 2 + 2 run's own CPU per account: the cores' capacity over what an account costs in that
           * shape. Close to the measured figure when the run is CPU-bound and nothing else (a lock, a queue)
           * holds it back.
           */
          cpu_bound_accounts_per_s: round((CORES * 1000) / two.cpu_ms_total, 1),
          cpu_bound_error_pct: round(
            ((two.accounts_per_s - (CORES * 1000) / two.cpu_ms_total) / ((CORES * 1000) / two.cpu_ms_total)) *
              100,
            1,
          ),
        },
      };
    }
    if (BACKENDS.includes('postgresql') && BACKENDS.includes('sqlite')) {
      const scaled = await runTopology(
        'postgresql',
        { webs: 2, workers: 2 },
        { cluster: true, balancer: true },
      );
      const single = (results.sqlite as { one_web_one_worker: { accounts_per_s: number } })
        .one_web_one_worker;
      results.scaled_topology = {
        ...scaled,
        single_machine_default_accounts_per_s: single.accounts_per_s,
        ratio_to_single: round(scaled.accounts_per_s / single.accounts_per_s, 2),
      };
    }
    results.queue_ceiling = await queueCeiling();
    return results;
  },
};
export default scenario;

async function runTopology(backend: Backend, shape: Shape, extras: Extras = {}) {
  const stops: Array<() => Promise<void> | void> = [];
  const children: Child[] = [];
  try {
    let redisUrl: string;
    let redisPids: () => number[];
    let clusterSeeds: string | undefined;
    if (extras.cluster) {
      const cluster = await startRedisCluster();
      stops.push(cluster.stop);
      redisUrl = 'redis://127.0.0.1:6379';
      clusterSeeds = cluster.seeds;
      redisPids = () => pidsListeningOn(cluster.ports, 'redis-server');
    } else {
      const redis = await startRedisServer();
      stops.push(redis.stop);
      redisUrl = redis.url;
      redisPids = () => (redis.pid ? [redis.pid] : []);
    }
    // One FerretDB per process on PostgreSQL, started once the schema exists (created through the bench's own
    // FerretDB, as `import-admin db init` would; see the README); one FerretDB shared on SQLite.
    const pods = shape.webs + shape.workers;
    const pg = backend === 'postgresql' ? await createPgDatabase('bench_capacity') : null;
    if (pg) stops.push(pg.drop);
    // Each FerretDB opens up to `pool_max_conns` PostgreSQL connections (50 by default): the pods' sidecars share
    // the server's max_connections (a few kept for others), as the README's capacity section says to set them.
    const poolSize = pg ? Math.floor((maxConnections() - 10) / pods) : null;
    const pgUrl = pg && poolSize ? withPool(pg.url, poolSize) : null;
    const first = pgUrl ? await startFerretDbOnPostgres(pgUrl) : await startFerretDb();
    stops.push(first.stop);
    const config = benchConfig(first.url, redisUrl, {
      ACCOUNT_CREATION_CONCURRENCY: String(LIMIT),
      // Below the FerretDB's pool, as the README says (a FerretDB v1 on PostgreSQL deadlocks otherwise).
      ...(poolSize ? { MONGO_MAX_POOL_SIZE: String(poolSize - 2) } : {}),
      ...(clusterSeeds ? { REDIS_CLUSTER_NODES: clusterSeeds } : {}),
    });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    stops.push(() => e.close());
    const sidecars: LocalServer[] = [];
    // The first web's sidecar is the FerretDB the schema was made through (as `up.sh --scaled` does).
    for (let i = 0; i < pods; i++) {
      const sidecar = pgUrl && i > 0 ? await startFerretDbOnPostgres(pgUrl) : first;
      if (sidecar !== first) stops.push(sidecar.stop);
      sidecars.push(sidecar);
    }
    const on = (sidecar: LocalServer) => {
      const url = new URL(config.MONGO_URL);
      url.port = String(sidecar.port);
      return url.toString();
    };
    const ports: number[] = [];
    for (let i = 0; i < shape.webs; i++) {
      const port = await freePort();
      ports.push(port);
      children.push(
        startProcess('web', {
          ...childEnv(config, childNodeOptions),
          MONGO_URL: on(sidecars[i]!),
          PORT: String(port),
          HOST: '127.0.0.1',
        }),
      );
    }
    for (let i = 0; i < shape.workers; i++) {
      children.push(
        startProcess('worker', {
          ...childEnv(config, childNodeOptions),
          MONGO_URL: on(sidecars[shape.webs + i]!),
          WORKER_CONCURRENCY: String(LIMIT),
        }),
      );
    }
    for (const port of ports) await waitForPort(port);
    let balancer: { pid: number } | null = null;
    let target = ports;
    if (extras.balancer) {
      const lbPort = await freePort();
      const lb = await startHaproxy(lbPort, [ports[0]!, ports[1]!]);
      stops.push(lb.stop);
      balancer = lb;
      target = [lbPort];
    }
    const client = httpCreationClient({
      ports: target,
      headers: e.headers,
      template: e.template,
      inFlight: LIMIT,
    });
    stops.push(() => client.close());

    // Warm-up (not measured): module loading, JIT, connection pools.
    await pool(
      Array.from({ length: WARM_UP }, (_, i) => `WARM-${i}`),
      LIMIT,
      (ext) => client.stageAndCreate(ext),
    );
    const pid = (c: Child) => () => processCpuSeconds(c.proc.pid);
    const ferretPids = [...new Set(sidecars)].map((s) => () => processCpuSeconds(s.pid));
    const meter = tierMeter({
      web: children.slice(0, shape.webs).map(pid),
      worker: children.slice(shape.webs).map(pid),
      ferretdb: ferretPids,
      ...(backend === 'postgresql' ? { postgresql: [postgresCpuSeconds] } : {}),
      redis: [() => redisPids().reduce((sum, p) => sum + (processCpuSeconds(p) ?? 0), 0)],
      ...(balancer ? { load_balancer: [() => processCpuSeconds(balancer.pid)] } : {}),
      load_generator: [() => cpuSecondsOfThisProcess()],
    });
    const started = performance.now();
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `CAP-${String(i).padStart(6, '0')}`);
    await pool(externals, LIMIT, (ext) => client.stageAndCreate(ext));
    const seconds = (performance.now() - started) / 1000;
    const cpu = meter.perItemMs(ACCOUNTS);
    const imported = await e.app.db.models.AccountImportProcess.countDocuments({
      krakenAccountNumber: { $ne: null },
    });
    if (imported !== ACCOUNTS + WARM_UP)
      throw new Error(`expected ${ACCOUNTS + WARM_UP} imported accounts, found ${imported}`);
    const total = Object.values(cpu).reduce<number>((s, v) => s + (v ?? 0), 0);
    const result = {
      backend,
      ...shape,
      redis: extras.cluster ? 'cluster (3 masters + 3 replicas)' : 'single',
      load_balancer: extras.balancer ? 'haproxy' : 'none (the load generator round-robins over the webs)',
      ...(poolSize ? { ferretdb_pool_max_conns: poolSize } : {}),
      seconds: round(seconds, 1),
      accounts_per_s: round(ACCOUNTS / seconds, 1),
      cpu_ms_per_account: cpu,
      cpu_ms_total: round(total, 2),
      /** How busy the machine's cores were: CPU used over CPU available during the run. */
      machine_utilisation: round((total * ACCOUNTS) / 1000 / (seconds * CORES), 2),
      retried_429: client.retried429,
      retried_503: client.retried503,
      followed_after_503: client.followed,
    };
    const label = `${backend} ${shape.webs}+${shape.workers}${extras.cluster ? ' scaled' : ''}`;
    console.log(`  ${label}: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    for (const stop of stops.reverse()) await stop();
  }
}

/** BENCH_CHILD_NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) for the webs and workers. */
const childNodeOptions: Record<string, string> = process.env.BENCH_CHILD_NODE_OPTIONS
  ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS }
  : {};

/** PostgreSQL's max_connections (the server the tests and benches use). */
function maxConnections(): number {
  const out = spawnSync('psql', [PG_URL, '-qAtc', 'show max_connections'], { encoding: 'utf8' });
  const n = Number(out.stdout.trim());
  if (out.status !== 0 || !Number.isInteger(n)) throw new Error(`psql show max_connections: ${out.stderr}`);
  return n;
}

/** A FerretDB PostgreSQL URL with its connection pool capped. */
function withPool(url: string, maxConns: number): string {
  const u = new URL(url);
  u.searchParams.set('pool_max_conns', String(maxConns));
  return u.toString();
}

function cpuSecondsOfThisProcess(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * One BullMQ queue on one Redis: jobs added in bulk and completed by no-op processors (concurrency 50, in
 * this process), as fast as they go. Redis's CPU per job gives the queue's ceiling on one Redis core (a
 * Redis Cluster master runs a queue on one core: its hash tag puts every key of the queue on one slot).
 */
async function queueCeiling() {
  const redis = await startRedisServer();
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const workerConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const prefix = '{bench:ceiling}';
  const queue = new Queue('ceiling', { connection, prefix });
  try {
    let completed = 0;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    const worker = new Worker('ceiling', async () => null, {
      connection: workerConnection,
      prefix,
      concurrency: LIMIT,
      autorun: false,
      removeOnComplete: { count: 1000 },
    });
    worker.on('completed', () => {
      if (++completed === QUEUE_JOBS) resolveDone();
    });
    const redisBefore = processCpuSeconds(redis.pid)!;
    const nodeBefore = cpuSecondsOfThisProcess();
    const started = performance.now();
    const adding = (async () => {
      for (let i = 0; i < QUEUE_JOBS; i += 500) {
        const n = Math.min(500, QUEUE_JOBS - i);
        await queue.addBulk(
          Array.from({ length: n }, (_, j) => ({
            name: 'create-account',
            data: { processId: `P-${i + j}`, operationsTeamId: 'x', dryRun: false, requestId: 'r' },
            opts: { jobId: `job-${i + j}`, removeOnComplete: { count: 1000 } },
          })),
        );
      }
    })();
    void worker.run();
    await adding;
    await done;
    const seconds = (performance.now() - started) / 1000;
    const redisMsPerJob = ((processCpuSeconds(redis.pid)! - redisBefore) * 1000) / QUEUE_JOBS;
    const nodeMsPerJob = ((cpuSecondsOfThisProcess() - nodeBefore) * 1000) / QUEUE_JOBS;
    await worker.close();
    return {
      jobs: QUEUE_JOBS,
      measured_jobs_per_s: round(QUEUE_JOBS / seconds, 0),
      redis_cpu_ms_per_job: round(redisMsPerJob, 4),
      producer_and_worker_cpu_ms_per_job: round(nodeMsPerJob, 4),
      /** Redis saturated (one core busy with this queue alone): the queue's ceiling on one master. */
      redis_bound_jobs_per_s: round(1000 / redisMsPerJob, 0),
    };
  } finally {
    await queue.close();
    connection.disconnect();
    workerConnection.disconnect();
    await redis.stop();
  }
}
