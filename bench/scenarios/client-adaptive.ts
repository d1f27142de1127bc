import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { childEnv, startProcess, type Child } from '../../test/creation/processes.js';
import { createPgDatabase, PG_URL, startFerretDbOnPostgres } from '../../test/support/postgres.js';
import { freePort, startRedisCluster, waitForPort, type LocalServer } from '../../test/support/processes.js';
import { startHaproxy } from '../capacity-env.js';
import { startWebAndWorker } from '../web-worker.js';
import { creationEnv } from '../creation-env.js';
import { benchConfig, round, type BenchEnv, type Scenario } from '../support.js';
import { clientRun } from './client.js';

const ACCOUNTS = Number(process.env.BENCH_CLIENT_ACCOUNTS ?? 2_000);
/** The fixed concurrencies the default is measured against. */
const FIXED = (process.env.BENCH_CLIENT_FIXED ?? '16,32,50,64').split(',').map(Number);
/** The service's creation limit (its default). */
const LIMIT = 50;
/**
 * The topologies, one after the other in one run (`BENCH_TOPOLOGY=single,scaled`): `single` is the
 * single-machine default (FerretDB on SQLite, one Redis, 1 web + 1 worker); `scaled` the scaled topology
 * (`up.sh --scaled`: a Redis Cluster of 3 masters + 3 replicas, PostgreSQL with a FerretDB per pod, 2 webs +
 * 2 workers, HAProxy in front, as the capacity scenario runs it).
 */
const TOPOLOGIES = (process.env.BENCH_TOPOLOGY ?? 'single').split(',').map((s) => s.trim()) as Topology[];
type Topology = 'single' | 'scaled';
type Service = { baseUrl: string; key: string; template: object; stop: () => Promise<void> };

/**
 * `import-client migrate` with its default options (adaptive concurrency, ceiling 64) against the same client
 * at each fixed concurrency of FIXED (`--no-adaptive`), on one service (creation limit 50) in one run, ACCOUNTS
 * realistic accounts a run (stage + create): accounts/s, the share of requests the service refused (429/503),
 * and where the adaptive limit went; the runs alternate (see `compare`). The default should be about as fast as
 * the best fixed value without knowing it, and keep the refusals to a few percent.
 */
const scenario: Scenario = {
  name: 'client-adaptive',
  description: `import-client migrate, default (adaptive, ceiling 64) vs --no-adaptive at ${FIXED.join(', ')}, ${ACCOUNTS} realistic accounts a run, creation limit ${LIMIT}, on ${TOPOLOGIES.join(' and ')}`,
  async run(env) {
    const result: Record<string, unknown> = { accounts_per_run: ACCOUNTS, creation_limit: LIMIT };
    for (const topology of TOPOLOGIES) {
      const service = topology === 'scaled' ? await scaledService() : await singleService(env);
      const dir = mkdtempSync(join(tmpdir(), 'bench-client-adaptive-'));
      try {
        result[topology] = await compare(service, dir, topology);
      } finally {
        await service.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    return result;
  },
};
export default scenario;

/**
 * The default, then each fixed concurrency between two runs of the default (default, fixed 16, default, fixed
 * 32, default, …): each fixed run is set against the mean of the default runs either side of it, so the
 * machine's drift over the scenario (its speed moves by half within minutes here) falls on both sides of each
 * pair. `default_to_best_fixed` is the lowest of those ratios: the default against the fixed value that beat it
 * by the most.
 */
async function compare(service: Service, dir: string, topology: Topology) {
  const runs: Record<string, unknown>[] = [];
  const once = async (label: string, args: string[]) => {
    const r = await clientRun(service.baseUrl, service.key, service.template, label, dir, {
      accounts: ACCOUNTS,
      args,
    });
    const c = r.concurrency;
    runs.push({
      run: label,
      accounts_per_s: r.rate,
      refused_pct: c.refused_pct,
      requests: c.requests,
      ...(c.mode === 'adaptive' ? { peak: c.peak, final: c.final, mean: c.mean, cuts: c.cuts } : {}),
    });
    console.log(`  ${topology} ${label}: ${r.rate} accounts/s, refused ${c.refused_pct} %`);
    return { rate: r.rate, refused: Number(c.refused_pct) };
  };
  const defaults = [await once('default-0', [])];
  const pairs: Record<string, { fixed: number; defaults_mean: number; ratio: number }> = {};
  for (const [i, n] of FIXED.entries()) {
    const fixed = await once(`fixed-${n}`, ['--concurrency', String(n), '--no-adaptive']);
    defaults.push(await once(`default-${i + 1}`, []));
    const mean = (defaults[i]!.rate + defaults[i + 1]!.rate) / 2;
    pairs[n] = { fixed: fixed.rate, defaults_mean: round(mean, 1), ratio: round(mean / fixed.rate, 2) };
  }
  const [bestN, best] = Object.entries(pairs).sort((a, b) => a[1].ratio - b[1].ratio)[0]!;
  return {
    runs,
    pairs,
    default_accounts_per_s: round(defaults.reduce((a, d) => a + d.rate, 0) / defaults.length, 1),
    default_refused_pct_max: Math.max(...defaults.map((d) => d.refused)),
    best_fixed: { concurrency: Number(bestN), accounts_per_s: best.fixed },
    default_to_best_fixed: best.ratio,
  };
}

/** The single-machine default: the bench's FerretDB (SQLite) and Redis, one web and one worker. */
async function singleService(env: BenchEnv): Promise<Service> {
  const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
  const e = await creationEnv(config, { workers: false, payload: 'realistic' });
  const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
    .api_key;
  const service = await startWebAndWorker(config);
  return {
    baseUrl: service.baseUrl,
    key,
    template: e.template,
    stop: async () => {
      await service.stop();
      await e.close();
    },
  };
}

/**
 * The scaled topology, as the capacity scenario starts it: a Redis Cluster, a PostgreSQL database with a
 * FerretDB sidecar per web and worker (their pools sharing the server's connections), 2 webs + 2 workers and
 * HAProxy (deploy/haproxy.cfg) in front of the webs; the client talks to HAProxy.
 */
async function scaledService(): Promise<Service> {
  const stops: Array<() => Promise<void>> = [];
  const children: Child[] = [];
  const stop = async () => {
    await Promise.all(children.map((c) => c.stop()));
    for (const s of stops.reverse()) await s();
  };
  try {
    const cluster = await startRedisCluster();
    stops.push(cluster.stop);
    const pg = await createPgDatabase('bench_client_adaptive');
    stops.push(pg.drop);
    const pods = 4;
    const poolSize = Math.floor((maxConnections() - 10) / pods);
    const pgUrl = new URL(pg.url);
    pgUrl.searchParams.set('pool_max_conns', String(poolSize));
    // The first pod's sidecar makes the schema (as `import-admin db init` would); the others start after it.
    const first = await startFerretDbOnPostgres(pgUrl.toString());
    stops.push(first.stop);
    const config = benchConfig(first.url, 'redis://127.0.0.1:6379', {
      ACCOUNT_CREATION_CONCURRENCY: String(LIMIT),
      MONGO_MAX_POOL_SIZE: String(poolSize - 2),
      REDIS_CLUSTER_NODES: cluster.seeds,
    });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    stops.push(() => e.close());
    const sidecars: LocalServer[] = [first];
    for (let i = 1; i < pods; i++) {
      const sidecar = await startFerretDbOnPostgres(pgUrl.toString());
      stops.push(sidecar.stop);
      sidecars.push(sidecar);
    }
    const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
      .api_key;
    const on = (i: number) => {
      const url = new URL(config.MONGO_URL);
      url.port = String(sidecars[i]!.port);
      return url.toString();
    };
    const ports = [await freePort(), await freePort()] as [number, number];
    ports.forEach((port, i) =>
      children.push(
        startProcess('web', { ...childEnv(config), MONGO_URL: on(i), PORT: String(port), HOST: '127.0.0.1' }),
      ),
    );
    for (const i of [2, 3])
      children.push(
        startProcess('worker', { ...childEnv(config), MONGO_URL: on(i), WORKER_CONCURRENCY: String(LIMIT) }),
      );
    for (const port of ports) await waitForPort(port);
    const lbPort = await freePort();
    const lb = await startHaproxy(lbPort, ports);
    stops.push(lb.stop);
    return { baseUrl: `http://127.0.0.1:${lbPort}`, key, template: e.template, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** PostgreSQL's max_connections (the server the tests and benches use). */
function maxConnections(): number {
  const out = spawnSync('psql', [PG_URL, '-qAtc', 'show max_connections'], { encoding: 'utf8' });
  const n = Number(out.stdout.trim());
  if (out.status !== 0 || !Number.isInteger(n)) throw new Error(`psql show max_connections: ${out.stderr}`);
  return n;
}
