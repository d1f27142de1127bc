import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, waitForPort } from '../support/processes.js';
import { childEnv, startProcess, type Child } from './processes.js';
import { accountPayload, apiFor, setupTenant, SUPPLIER, TEAM, until } from './support.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { workerConnection, type RedisClient } from '../../src/infra/redis.js';

// 2 web and 2 worker processes (the service's own entry points), 200 creates at once, limit 50. The workers
// start only once the first round has been answered at the limit: the first 50 creates hold their slots
// while they wait, so the other 150 are refused 429 whatever the machine's speed.
const ACCOUNTS = 200;
const LIMIT = 50;

let t: TestApp;
let headers: Record<string, string>;
let ports: number[] = [];
const children: Child[] = [];
let connection: RedisClient;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'scale', ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) } });
  headers = (await setupTenant(t)).headers;
  ports = [await freePort(), await freePort()];
  // The creates that hold a slot wait for the workers (started later) rather than answer 202.
  env = childEnv(t.config, { ACCOUNT_CREATION_WAIT_MS: '600000' });
  for (const port of ports)
    children.push(startProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' }));
  await Promise.all(ports.map((p) => waitForPort(p)));
  connection = workerConnection(t.config);
});

function startWorkers() {
  // Few jobs per worker: FerretDB's SQLite backend serialises writes, so more would only contend.
  for (let i = 0; i < 2; i++) children.push(startProcess('worker', { ...env, WORKER_CONCURRENCY: '5' }));
}
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  connection?.disconnect();
  await t?.close();
});

async function create(port: number, external: string) {
  const res = await fetch(`http://127.0.0.1:${port}/v1/data-import/account-import-process/process/`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({
      external_account_number: external,
      import_supplier_code: SUPPLIER,
      operations_team_name: TEAM,
    }),
  });
  const retryAfter = Number(res.headers.get('retry-after') ?? 1);
  return {
    status: res.status,
    retryAfter,
    body: (await res.json()) as { code?: string; kraken_account_number?: string },
  };
}

it(
  'never has more than the limit in flight across 2 web and 2 worker processes; every account ends created',
  { timeout: 900_000 },
  async () => {
    const api = apiFor(t, headers);
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `SCALE-${String(i).padStart(3, '0')}`);
    for (const ext of externals) expect((await api.stage(accountPayload(ext))).statusCode).toBe(201);

    const slots = new CreationSlots(connection, t.config);
    const queue = new Queue('account-creation', {
      connection,
      prefix: redisKeys(t.config.QUEUE_PREFIX).queuePrefix('account-creation'),
    });
    // An independent observer besides the slot set's own high-water mark: slots held and jobs running.
    let sampling = true;
    let maxSlots = 0;
    let maxActive = 0;
    const sampler = (async () => {
      while (sampling) {
        const [held, active] = await Promise.all([slots.inFlight(), queue.getActiveCount()]);
        maxSlots = Math.max(maxSlots, held);
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    const firstRound: number[] = [];
    const statuses: number[] = [];
    let workersStarted = false;
    await Promise.all(
      externals.map(async (ext, i) => {
        const port = ports[i % ports.length]!;
        for (let attempt = 0; ; attempt++) {
          const res = await create(port, ext);
          statuses.push(res.status);
          if (attempt === 0) firstRound.push(res.status);
          if (!workersStarted && firstRound.length === ACCOUNTS - LIMIT) {
            workersStarted = true;
            startWorkers();
          }
          if (res.status === 201 || res.body.code === 'account_import_process_already_imported') return;
          if (res.status !== 429 && res.status !== 503)
            throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)}`);
          // A well-behaved client: Retry-After with jitter (capped, to keep the test short).
          await new Promise((r) => setTimeout(r, Math.min(res.retryAfter, 2) * 1000 * (0.5 + Math.random())));
        }
      }),
    );
    sampling = false;
    await sampler;

    const peak = await slots.peak();
    console.info(
      `scale-out: peak in flight (slot set) ${peak}, sampled slots ${maxSlots}, sampled active jobs ${maxActive}, ` +
        `first round: ${firstRound.filter((s) => s === 201).length} × 201, ${firstRound.filter((s) => s === 429).length} × 429; ` +
        `${statuses.length} requests in all`,
    );
    expect(peak).toBe(LIMIT);
    expect(maxSlots).toBeLessThanOrEqual(LIMIT);
    expect(maxActive).toBeLessThanOrEqual(LIMIT);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    // Before any worker ran, the first 50 held the limit's slots and every other create was refused.
    expect(firstRound.filter((s) => s === 429)).toHaveLength(ACCOUNTS - LIMIT);
    expect(firstRound.filter((s) => s === 201)).toHaveLength(LIMIT);

    const { models } = t.app.db;
    expect(await models.Account.countDocuments({ importSupplier: SUPPLIER })).toBe(ACCOUNTS);
    expect(await models.AccountImportProcess.countDocuments({ krakenAccountNumber: { $ne: null } })).toBe(
      ACCOUNTS,
    );
    const numbers = await models.Account.distinct('number');
    expect(numbers).toHaveLength(ACCOUNTS);
    await until(async () => (await slots.inFlight()) === 0, 'every slot released');
    await queue.close();
  },
);
