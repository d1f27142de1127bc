import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../creation/support.js';
import { freePort, freePortRun, portsFree } from '../support/processes.js';

// The scaled topology as people start it: `scripts/up.sh --scaled` (Redis Cluster, PostgreSQL with one FerretDB
// per pod, 2 webs and 2 workers, HAProxy), then the API through the load balancer, a web killed, and
// `scripts/down.sh --scaled`. Its ports are free ones (or SCALED_TEST_LB_PORT, SCALED_TEST_WEB_BASE_PORT,
// SCALED_TEST_FERRETDB_BASE_PORT, SCALED_TEST_REDIS_BASE_PORT), its directory and PostgreSQL database its own
// (SCALED_TEST_PG_PORT when PostgreSQL is not on 5432), so it runs next to the suite and to a topology already up.
const root = resolve(import.meta.dirname, '../..');
const tag = randomBytes(4).toString('hex');
const dir = resolve(root, `.data/scaled-test-${tag}`);
const database = `scaled_test_${tag}`;
let env: NodeJS.ProcessEnv;
let lb: string;
let ports: { lb: number; web: number[]; ferretdb: number[]; redis: number[] };
let apiKey: string;
let upSeconds = 0;
let upPhases = '';
let stopped = false;

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn('bash', args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('close', (code) => done({ code, output }));
  });
}

async function choosePorts() {
  const fixed = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);
  const lbPort = fixed('SCALED_TEST_LB_PORT') ?? (await freePort());
  const web = fixed('SCALED_TEST_WEB_BASE_PORT') ?? (await freePortRun(2));
  const ferretdb = fixed('SCALED_TEST_FERRETDB_BASE_PORT') ?? (await freePortRun(4));
  const redis = fixed('SCALED_TEST_REDIS_BASE_PORT') ?? (await freePortRun(6, { bus: true }));
  const run = (start: number, n: number) => Array.from({ length: n }, (_, i) => start + i);
  ports = { lb: lbPort, web: run(web, 2), ferretdb: run(ferretdb, 4), redis: run(redis, 6) };
  const all = [
    ports.lb,
    ...ports.web,
    ...ports.ferretdb,
    ...ports.redis,
    ...ports.redis.map((p) => p + 10_000),
  ];
  if (!(await portsFree(all)))
    throw new Error(`some of the scaled test's ports are in use: ${all.join(' ')}`);
}

beforeAll(async () => {
  await choosePorts();
  env = {
    ...process.env,
    SCALED_DIR: dir,
    SCALED_LB_PORT: String(ports.lb),
    SCALED_WEB_BASE_PORT: String(ports.web[0]),
    SCALED_FERRETDB_BASE_PORT: String(ports.ferretdb[0]),
    REDIS_CLUSTER_BASE_PORT: String(ports.redis[0]),
    SCALED_PG_PORT: process.env.SCALED_TEST_PG_PORT ?? '5432',
    SCALED_PG_DATABASE: database,
  };
  lb = `http://127.0.0.1:${ports.lb}`;
  const started = Date.now();
  const up = await run(['scripts/up.sh', '--scaled']);
  upSeconds = Math.round((Date.now() - started) / 1000);
  upPhases = up.output
    .split('\n')
    .filter((line) => line.startsWith('[scaled +'))
    .join('\n');
  if (up.code !== 0) throw new Error(`up.sh --scaled exited ${up.code}:\n${up.output}`);
  apiKey = /API key \(shown once\): (amk_\S+)/.exec(up.output)?.[1] ?? '';
  expect(up.output).toContain(`load balancer ${lb}`);
  expect(up.output).toContain(`Logs in ${dir}/logs/`);
}, 900_000);

afterAll(async () => {
  try {
    if (!stopped && env) await run(['scripts/down.sh', '--scaled']);
  } finally {
    if (env)
      await run(['-c', `dropdb --if-exists -h 127.0.0.1 -p "$SCALED_PG_PORT" -U postgres ${database}`]);
    // The logs of the last run stay for reading (test-output/ is not in git).
    const logs = resolve(root, 'test-output/scaled-topology');
    rmSync(logs, { recursive: true, force: true });
    if (existsSync(resolve(dir, 'logs'))) cpSync(resolve(dir, 'logs'), logs, { recursive: true });
    rmSync(dir, { recursive: true, force: true });
  }
  console.info(`up.sh --scaled took ${upSeconds} s:\n${upPhases}`);
}, 300_000);

/** A call through the load balancer, with a request id naming the step. */
async function call(method: string, path: string, body?: unknown, token?: string, requestId?: string) {
  const res = await fetch(`${lb}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Token ${token}` } : {}),
      ...(requestId ? { 'x-request-id': requestId } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    requestId: res.headers.get('x-request-id'),
    body: text ? JSON.parse(text) : null,
  };
}

/** The migration of one account through the load balancer, as the demo's README steps do it. */
async function migrate(external: string) {
  const token = await call('POST', '/v1/graphql/', {
    query: `mutation { obtainKrakenToken(input: {APIKey: "${apiKey}"}) { token } }`,
  });
  expect(token.status, JSON.stringify(token.body)).toBe(200);
  const bearer = token.body.data.obtainKrakenToken.token as string;
  const payload = {
    ...JSON.parse(readFileSync(resolve(root, 'docs/examples/account.json'), 'utf8')),
    import_supplier: 'DEMO',
    external_account_number: external,
  };
  const validated = await call(
    'POST',
    '/v1/data-import/validate-account/',
    payload,
    bearer,
    `${external}-validate`,
  );
  expect(validated.status, JSON.stringify(validated.body)).toBe(200);
  expect(validated.requestId).toBe(`${external}-validate`);
  const staged = await call(
    'POST',
    '/v1/data-import/account-import-process/create-or-update/',
    payload,
    bearer,
  );
  expect(staged.status, JSON.stringify(staged.body)).toBe(201);
  const created = await call(
    'POST',
    '/v1/data-import/account-import-process/process/',
    { external_account_number: external, import_supplier_code: 'DEMO', operations_team_name: 'Migrations' },
    bearer,
  );
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const status = await call(
    'GET',
    `/v1/data-import/account-transfer-status/DEMO/${external}/`,
    undefined,
    bearer,
  );
  expect(status.status).toBe(200);
  expect(status.body).toEqual({
    status: 'COMPLETED',
    kraken_account_number: created.body.kraken_account_number,
  });
}

/** Every pid the topology's pid files name (its processes, and the Redis Cluster's nodes). */
function topologyPids(): number[] {
  const files = [
    ...readdirSync(resolve(dir, 'pids')).map((f) => resolve(dir, 'pids', f)),
    ...ports.redis.map((p) => resolve(root, `.data/redis-cluster/${ports.redis[0]}/redis-${p}.pid`)),
  ];
  return files.filter((f) => existsSync(f)).map((f) => Number(readFileSync(f, 'utf8').trim()));
}
/** Running: there, and not a zombie waiting for its parent. */
const alive = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false;
  }
};

describe('the scaled topology (scripts/up.sh --scaled)', () => {
  it('migrates an account through the load balancer; every pod reads it through its own FerretDB', async () => {
    expect(apiKey).toMatch(/^amk_/);
    await migrate(`SCALED-${tag}-1`);
    // The pods' four FerretDBs, one PostgreSQL database: each sees the account (and the staged payload) that
    // whichever web and worker wrote.
    for (const port of ports.ferretdb) {
      const conn = await mongoose
        .createConnection(`mongodb://127.0.0.1:${port}/account_migration`)
        .asPromise();
      try {
        const query = { importSupplier: 'DEMO', externalAccountNumber: `SCALED-${tag}-1` };
        expect(await conn.db!.collection('accounts').countDocuments(query), `FerretDB on ${port}`).toBe(1);
        expect(await conn.db!.collection('staged_payloads').countDocuments(), `FerretDB on ${port}`).toBe(1);
      } finally {
        await conn.close();
      }
    }
  });

  it('keeps answering through the load balancer when a web is killed', async () => {
    const web1 = Number(readFileSync(resolve(dir, 'pids/web-1.pid'), 'utf8'));
    process.kill(web1, 'SIGKILL');
    // Once it is gone (a request it accepted while dying is lost with it: not sent again, by design), and before
    // the health checks take it out: the connections it refuses are retried on web-2.
    await until(async () => !alive(web1) && (await portsFree([ports.web[0]!])), 'web-1 to be gone', 30_000);
    for (let i = 2; i <= 4; i++) await migrate(`SCALED-${tag}-${i}`);
    // The health checks take it out (and the rest goes to web-2 straight away).
    await until(
      async () => /Server webs\/web-1 is DOWN/.test(readFileSync(resolve(dir, 'logs/lb.log'), 'utf8')),
      'the load balancer to mark web-1 down',
    );
    await migrate(`SCALED-${tag}-5`);
  });

  it('scripts/down.sh stops every process it started', async () => {
    const pids = topologyPids();
    // 1 load balancer, 2 webs (one already killed), 2 workers, 4 FerretDBs, 6 Redis nodes.
    expect(pids.length).toBe(15);
    const down = await run(['scripts/down.sh', '--scaled']);
    stopped = true;
    expect(down.code, down.output).toBe(0);
    expect(pids.filter(alive)).toEqual([]);
    expect(await portsFree([ports.lb, ...ports.web, ...ports.ferretdb, ...ports.redis])).toBe(true);
  });
});
