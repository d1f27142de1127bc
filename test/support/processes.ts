import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export type LocalServer = {
  url: string;
  port: number;
  pid?: number;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

/**
 * Claims ports for this test run across its worker processes: one file per port in the run's directory
 * (`TEST_PORT_CLAIMS`, made by the global setup), created exclusively, so one creator wins. Two test files
 * then never choose the same port, even while one has chosen and not yet bound it (the scaled topology binds
 * its web ports some 20 s after choosing them; a Redis Cluster's bus ports sit 10,000 above its nodes').
 * A claim lasts until the run ends. Without the directory (a test run without the global setup), the check that
 * nothing listens is all there is.
 */
export function claimPorts(ports: readonly number[]): boolean {
  const dir = process.env.TEST_PORT_CLAIMS;
  if (!dir) return true;
  const made: string[] = [];
  for (const port of ports) {
    const file = join(dir, String(port));
    try {
      closeSync(openSync(file, 'wx'));
      made.push(file);
    } catch (error) {
      for (const mine of made) rmSync(mine, { force: true });
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }
  return true;
}

/** A port nothing listens on, chosen by the kernel, and claimed for this test run. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await unusedPort();
    if (claimPorts([port])) return port;
  }
  throw new Error('no free port that another test file had not claimed');
}

function unusedPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Resolves once something accepts TCP connections on the port (the server's own readiness signal). */
export async function waitForPort(port: number, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((res) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        res(true);
      });
      socket.once('error', () => res(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function stopper(child: ChildProcess, dir?: string): LocalServer['stop'] {
  return async (signal = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  };
}

export function ferretdbBinary(): string | null {
  const local = resolve(import.meta.dirname, '../../.tools/bin/ferretdb');
  if (existsSync(local)) return local;
  return null;
}

/**
 * FerretDB's garbage collector setting, as `scripts/up.sh` and `scripts/scaled.sh` run it (`FERRETDB_GOGC`
 * overrides it): at 400 it collects a quarter as often as Go's default of 100, which took about 15% off its CPU
 * per account in the creation benchmark for about 25 MB more memory (docs/benchmarks.md).
 */
const FERRETDB_GOGC = process.env.FERRETDB_GOGC ?? '400';

/**
 * A FerretDB instance on the SQLite backend in a temporary directory: its own port, state and no debug port.
 * WAL with synchronous=NORMAL (as `scripts/up.sh` runs it): no fsync per commit, the durability window of
 * MongoDB's default journaling (an OS crash may drop the last commits; a process crash drops nothing).
 * Given a `dir` (and `port`), the data is the caller's: stopping keeps it, and starting again on the same
 * directory and port brings back "the same" server.
 */
export async function startFerretDb(
  options: {
    port?: number;
    dir?: string;
    /** A PostgreSQL database URL: FerretDB's PostgreSQL backend instead of SQLite (the database must exist). */
    postgresqlUrl?: string;
    /** Serve FerretDB's debug handlers (Prometheus metrics at /debug/metrics) on this port. */
    debugPort?: number;
  } = {},
): Promise<LocalServer> {
  const bin = ferretdbBinary();
  if (!bin) throw new Error('FerretDB is not built: run scripts/ensure-ferretdb.sh (or set MONGO_URL)');
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'ferretdb-'));
  const port = options.port ?? (await freePort());
  const backend = options.postgresqlUrl
    ? ['--handler=postgresql', `--postgresql-url=${options.postgresqlUrl}`]
    : ['--handler=sqlite', `--sqlite-url=file:${dir}/?_pragma=synchronous(normal)`];
  // Its log (errors only; a SIGQUIT writes every goroutine's stack there) stays in its state directory.
  const log = openSync(join(dir, 'ferretdb.log'), 'a');
  const child = spawn(
    bin,
    [
      ...backend,
      `--state-dir=${dir}`,
      `--listen-addr=127.0.0.1:${port}`,
      options.debugPort ? `--debug-addr=127.0.0.1:${options.debugPort}` : '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=ERROR',
    ],
    { stdio: ['ignore', 'ignore', log], env: { ...process.env, GOGC: FERRETDB_GOGC } },
  );
  closeSync(log);
  await waitForPort(port);
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    pid: child.pid,
    stop: stopper(child, options.dir ? undefined : dir),
  };
}

/** A throwaway redis-server (no persistence). A fixed port lets a test stop and restart "the same" Redis. */
export async function startRedisServer(port?: number): Promise<LocalServer> {
  const chosen = port ?? (await freePort());
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(chosen),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--loglevel',
      'warning',
    ],
    { stdio: 'ignore' },
  );
  await waitForPort(chosen);
  return { url: `redis://127.0.0.1:${chosen}`, port: chosen, pid: child.pid, stop: stopper(child) };
}

export type LocalCluster = {
  /** `host:port,…`, as REDIS_CLUSTER_NODES takes them. */
  seeds: string;
  ports: number[];
  /** SIGKILLs one node / starts it again (it rejoins with its saved cluster config). */
  killNode: (port: number) => Promise<void>;
  startNode: (port: number) => Promise<void>;
  /** SIGSTOPs one node (it answers nothing, keeps its state) / SIGCONTs it. */
  pauseNode: (port: number) => Promise<void>;
  resumeNode: (port: number) => Promise<void>;
  stop: () => Promise<void>;
};

const clusterScript = resolve(import.meta.dirname, '../../scripts/redis-cluster.sh');

export async function portsFree(ports: number[]): Promise<boolean> {
  const free = (port: number) =>
    new Promise<boolean>((res) => {
      const srv = createServer();
      srv.once('error', () => res(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
    });
  for (const port of ports) if (!(await free(port))) return false;
  return true;
}

/**
 * Where runs of ports are chosen: 10,000–22,700, so that they and their Redis Cluster bus ports (10,000 above)
 * stay below Linux's ephemeral range (32,768 and up). A port in that range can be taken by any outgoing
 * connection between the check and the bind, which a busy test run makes likely (a cluster node then fails to
 * start: "bind: Address already in use" on its bus port).
 */
const runCandidate = () => 10_000 + Math.floor(Math.random() * 12_700);

/**
 * The first of `count` free ports in a row, below the ephemeral range, claimed for this test run; with `bus`,
 * the ports 10,000 above them are free and claimed too (a Redis Cluster node's bus port).
 */
export async function freePortRun(count: number, options: { bus?: boolean } = {}): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const candidate = runCandidate();
    const ports = Array.from({ length: count }, (_, i) => candidate + i);
    const all = options.bus ? [...ports, ...ports.map((p) => p + 10_000)] : ports;
    if (claimPorts(all) && (await portsFree(all))) return candidate;
  }
  throw new Error(`no ${count} free ports in a row`);
}

/** A cluster's six node ports from its base port, and their cluster bus ports (10,000 above). */
function clusterPorts(base: number): number[] {
  const ports = Array.from({ length: 6 }, (_, i) => base + i);
  return [...ports, ...ports.map((p) => p + 10_000)];
}

/**
 * A throwaway Redis Cluster of 3 masters and 3 replicas (scripts/redis-cluster.sh) on six free ports in a row
 * (and their cluster bus ports, 10,000 above), or on the six from `basePort`.
 */
export async function startRedisCluster(options: { basePort?: number } = {}): Promise<LocalCluster> {
  let base = options.basePort ?? 0;
  if (base && !(await portsFree(clusterPorts(base))))
    throw new Error(`ports ${base}–${base + 5} (or their bus ports) are taken: choose another base port`);
  for (let attempt = 0; attempt < 50 && !base; attempt++) {
    const candidate = runCandidate();
    if (claimPorts(clusterPorts(candidate)) && (await portsFree(clusterPorts(candidate)))) base = candidate;
  }
  if (!base) throw new Error('no six free ports in a row for a Redis Cluster');
  const run = (...args: string[]) =>
    new Promise<string>((res, reject) => {
      const child = spawn('bash', [clusterScript, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.once('exit', (code) =>
        code === 0 ? res(out.trim()) : reject(new Error(`redis-cluster.sh ${args.join(' ')} exited ${code}`)),
      );
    });
  const seeds = await run('start', String(base));
  return {
    seeds,
    ports: Array.from({ length: 6 }, (_, i) => base + i),
    killNode: async (port) => void (await run('kill-node', String(port), String(base))),
    startNode: async (port) => void (await run('start-node', String(port), String(base))),
    pauseNode: async (port) => void (await run('pause-node', String(port), String(base))),
    resumeNode: async (port) => void (await run('resume-node', String(port), String(base))),
    stop: async () => void (await run('stop', String(base))),
  };
}

/** Runs `psql` against a PostgreSQL server (a URL naming its maintenance database) with one SQL command. */
function psql(serverUrl: string, sql: string): Promise<void> {
  return new Promise((res, reject) => {
    const child = spawn('psql', [serverUrl, '-v', 'ON_ERROR_STOP=1', '-qAtc', sql], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? res() : reject(new Error(`psql ${sql}: exited ${code}: ${err.trim()}`)),
    );
  });
}

export type PostgresDatabase = { name: string; url: string; drop: () => Promise<void> };

/**
 * A fresh PostgreSQL database (for FerretDB's PostgreSQL backend) on the server of `serverUrl`
 * (e.g. `postgres://postgres@127.0.0.1:5432/postgres`); `drop` removes it, connections and all.
 */
export async function createPostgresDatabase(serverUrl: string, name: string): Promise<PostgresDatabase> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
  await psql(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => psql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
