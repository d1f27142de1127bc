import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { describeServer, serverRefusal } from '../../src/infra/database-server.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { uniqueName } from '../support/env.js';
import { createPgDatabase } from '../support/postgres.js';
import {
  freePort,
  startFerretDb,
  waitForPort,
  type LocalServer,
  type PostgresDatabase,
} from '../support/processes.js';

// The service tells the project's FerretDB build from a stock one at start (the build's `buildInfo` says
// `accountMigrationBuild`, scripts/ferretdb-build-info.patch) and refuses what deadlocks over PostgreSQL: a stock
// FerretDB v1 (its updates hold a PostgreSQL connection per statement until the command ends), and a pool of its
// own that is not below the FerretDB's `pool_max_conns`. Both builds run here for real: the stock one is FerretDB
// v1.24.2 as released, built by `scripts/ensure-ferretdb.sh --stock`.
const root = resolve(import.meta.dirname, '../..');
const stockBinary = join(root, '.tools/bin/ferretdb-stock');

let pg: PostgresDatabase;
const servers: LocalServer[] = [];
const opened: Database[] = [];

beforeAll(async () => {
  const built = spawnSync('bash', [join(root, 'scripts/ensure-ferretdb.sh'), '--stock'], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 590_000,
  });
  if (built.status !== 0) throw new Error('scripts/ensure-ferretdb.sh --stock failed (above)');
  pg = await createPgDatabase('test_build');
}, 600_000);

afterAll(async () => {
  for (const db of opened) await db.close();
  for (const s of servers) await s.stop();
  await pg?.drop();
});

/** The stock FerretDB, run as test/support/processes.ts runs the project's. */
async function startStock(options: { postgresqlUrl?: string } = {}): Promise<LocalServer> {
  const dir = mkdtempSync(join(tmpdir(), 'ferretdb-stock-'));
  const port = await freePort();
  const backend = options.postgresqlUrl
    ? ['--handler=postgresql', `--postgresql-url=${options.postgresqlUrl}`]
    : ['--handler=sqlite', `--sqlite-url=file:${dir}/`];
  const child = spawn(
    stockBinary,
    [
      ...backend,
      `--state-dir=${dir}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=ERROR',
    ],
    { stdio: 'ignore' },
  );
  await waitForPort(port);
  const server: LocalServer = {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    pid: child.pid,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill(signal);
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  servers.push(server);
  return server;
}

async function startProject(options: { postgresqlUrl?: string } = {}): Promise<LocalServer> {
  const server = await startFerretDb(options);
  servers.push(server);
  return server;
}

const withPool = (url: string, maxConns: number) => {
  const u = new URL(url);
  u.searchParams.set('pool_max_conns', String(maxConns));
  return u.toString();
};

/** openDatabase through `server` with a pool of `pool`: the opened database, or what it threw. */
async function open(server: LocalServer, pool: number): Promise<Database | Error> {
  try {
    const db = await openDatabase({
      MONGO_URL: `${server.url}${uniqueName('build')}`,
      MONGO_SERVER_SELECTION_TIMEOUT_MS: 10_000,
      MONGO_MAX_POOL_SIZE: pool,
    });
    opened.push(db);
    return db;
  } catch (err) {
    return err as Error;
  }
}

/** What the server says it is, read on a plain connection of its own. */
async function serverAt(server: LocalServer) {
  const conn = await mongoose.createConnection(`${server.url}${uniqueName('describe')}`).asPromise();
  try {
    return await describeServer(conn.db!);
  } finally {
    await conn.close();
  }
}

describe('on PostgreSQL', () => {
  it('the project’s build reports its pool, and a process whose pool is not below it is refused with the remedy', async () => {
    const sidecar = await startProject({ postgresqlUrl: withPool(pg.url, 8) });
    expect(await open(sidecar, 7)).not.toBeInstanceOf(Error);
    expect(await serverAt(sidecar)).toEqual({
      kind: 'ferretdb',
      version: 'v1.24.2',
      build: 'project',
      handler: 'postgresql',
      poolMaxConns: 8,
    });
    const refused = await open(sidecar, 8);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^MONGO_MAX_POOL_SIZE=8 is not below the PostgreSQL pool of the FerretDB at 127\\.0\\.0\\.1:${sidecar.port} ` +
          `\\(pool_max_conns=8\\).*Set MONGO_MAX_POOL_SIZE below 8.*raise pool_max_conns in its --postgresql-url`,
        's',
      ),
    );
    // A sidecar started without pool_max_conns has FerretDB's default of 50: the service's default pool (50) is
    // refused on it.
    const defaultPool = await startProject({ postgresqlUrl: pg.url });
    expect(await serverAt(defaultPool)).toMatchObject({ build: 'project', poolMaxConns: 50 });
    expect(await open(defaultPool, 50)).toBeInstanceOf(Error);
  });

  it('a stock FerretDB v1 is refused, naming the project’s build as the remedy, whatever the pools', async () => {
    const stock = await startStock({ postgresqlUrl: withPool(pg.url, 40) });
    const refused = await open(stock, 5);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(
      /^The FerretDB at 127\.0\.0\.1:\d+ is a stock FerretDB v1\.24\.2 on PostgreSQL, not the project's build: .*waits for ever\. Run the project's build there \(scripts\/ensure-ferretdb\.sh/s,
    );
    expect(await serverAt(stock)).toEqual({
      kind: 'ferretdb',
      version: 'v1.24.2',
      build: 'stock',
      handler: 'postgresql',
      poolMaxConns: null,
    });
  });
});

describe('on SQLite (the single-machine default)', () => {
  it('both builds are accepted, whatever the pool', async () => {
    const project = await startProject();
    const stock = await startStock();
    expect(await open(project, 500)).not.toBeInstanceOf(Error);
    expect(await open(stock, 500)).not.toBeInstanceOf(Error);
    expect(await serverAt(project)).toMatchObject({
      build: 'project',
      handler: 'sqlite',
      poolMaxConns: null,
    });
    expect(await serverAt(stock)).toMatchObject({ build: 'stock', handler: 'sqlite', poolMaxConns: null });
  });
});

it('the suite’s own FerretDB is the project’s build, and on the PostgreSQL leg refuses a pool of its size', async () => {
  const postgresqlLeg = process.env.TEST_DATABASE === 'postgresql';
  const suite: LocalServer = { url: inject('mongoUrl'), port: 0, stop: async () => {} };
  expect(await serverAt(suite)).toMatchObject(
    postgresqlLeg
      ? { build: 'project', handler: 'postgresql', poolMaxConns: 60 }
      : { build: 'project', handler: 'sqlite', poolMaxConns: null },
  );
  const big = await open(suite, 60);
  expect(big instanceof Error ? big.message : 'opened').toMatch(
    postgresqlLeg ? /^MONGO_MAX_POOL_SIZE=60 is not below .*pool_max_conns=60/ : /^opened$/,
  );
});

it('MongoDB, and FerretDB past v1, are never refused', () => {
  expect(serverRefusal({ kind: 'mongodb' }, 500, 'mongo:27017')).toBeNull();
  const v2 = {
    kind: 'ferretdb',
    version: 'v2.1.0',
    build: 'stock',
    handler: null,
    poolMaxConns: null,
  } as const;
  expect(serverRefusal(v2, 500, 'ferretdb:27017')).toBeNull();
});
