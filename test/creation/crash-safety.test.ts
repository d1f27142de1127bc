import { Queue } from 'bullmq';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { startHoldingProxy, type HoldingProxy } from '../support/mongo-proxy.js';
import { childEnv, killWorkersWhileTheyWork, startProcess, type Child } from './processes.js';
import { apiFor, recordCounts, setupTenant, SUPPLIER, until, type Api } from './support.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { workerConnection, type RedisClient } from '../../src/infra/redis.js';

// Worker processes SIGKILLed while they create accounts; each killed job is picked up again by the next worker
// (short locks so a dead worker's job is noticed quickly) and must converge on one of everything.
// First, kills at chosen points: a worker whose database connection goes through a proxy that holds one write
// (the account insert, the journal insert, the final mark) is killed while that write is held, so it dies
// exactly between the writes before it and that one, on any machine. Then kills at random moments, for the
// points nobody thought of. One job at a time per worker.
const BOUNDARIES = [
  { command: 'insert', collection: 'accounts', where: 'before the account insert' },
  { command: 'insert', collection: 'ledger_journal', where: 'between the account and its journal' },
  { command: 'update', collection: 'account_import_processes', where: 'between PROCESSED and the mark' },
] as const;
const ROUNDS = 1;
const RANDOM_KILLS = 8;
const ACCOUNTS = Array.from({ length: 150 }, (_, i) => `CRASH-${i + 1}`);
const KILL_WINDOW_MS = 250;

let t: TestApp;
let api: Api;
let headers: Record<string, string>;
let queue: Queue;
let connection: RedisClient;
let proxy: HoldingProxy;
const children: Child[] = [];

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'crash',
      ACCOUNT_CREATION_WAIT_MS: '280000',
      ACCOUNT_CREATION_SLOT_LEASE_MS: '2000',
      // Every account's create is sent at once: none may be refused at the limit.
      ACCOUNT_CREATION_CONCURRENCY: '0',
    },
  });
  headers = (await setupTenant(t)).headers;
  api = apiFor(t, headers);
  connection = workerConnection(t.config);
  queue = new Queue('account-creation', {
    connection,
    prefix: redisKeys(t.config.QUEUE_PREFIX).queuePrefix('account-creation'),
  });
  const mongo = new URL(t.config.MONGO_URL);
  proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
});
afterAll(async () => {
  for (const c of children) await c.stop('SIGKILL');
  await queue?.close();
  connection?.disconnect();
  await proxy?.close();
  await t?.close();
});

function payload(external: string) {
  return { ...realisticAccountPayload(), import_supplier: SUPPLIER, external_account_number: external };
}

/** Accounts written but not yet marked imported: a creation interrupted in the middle. */
async function midCreation(): Promise<number> {
  const { models } = t.app.db;
  const accounts = await models.Account.countDocuments({ importSupplier: SUPPLIER });
  const imported = await models.AccountImportProcess.countDocuments({ krakenAccountNumber: { $ne: null } });
  return accounts - imported;
}

/** Held: the write is waiting in the proxy; the proxy never lets it through, since the worker dies first. */
async function killAt(env: NodeJS.ProcessEnv, boundary: (typeof BOUNDARIES)[number]): Promise<void> {
  const held = proxy.holdNext(boundary.command, boundary.collection);
  const child = startProcess('worker', env);
  children.push(child);
  await Promise.race([
    held,
    child.exited.then(() => Promise.reject(new Error(`the worker exited before ${boundary.where}`))),
  ]);
  await child.stop('SIGKILL');
}

it(
  `ends with exactly one account and one copy of each record after SIGKILLs of the worker at each write and at random`,
  { timeout: 900_000 },
  async () => {
    for (const ext of ACCOUNTS) expect((await api.stage(payload(ext))).statusCode).toBe(201);
    const answers = new Map<string, LightMyRequestResponse>();
    const requests = ACCOUNTS.map((ext) => api.create(ext).then((res) => void answers.set(ext, res)));
    const env = childEnv(t.config, {
      WORKER_LOCK_DURATION_MS: '1000',
      WORKER_STALLED_INTERVAL_MS: '300',
      WORKER_MAX_STALLED_COUNT: '1000',
      WORKER_CONCURRENCY: '1',
    });

    // Every time a worker takes a job, its `attemptsStarted` grows: that is "the job turned active" for this worker.
    // No worker runs yet, so every create job is still waiting in the queue.
    const jobIds = await until(async () => {
      const jobs = await queue.getJobs(['waiting']);
      return jobs.length === ACCOUNTS.length ? jobs.map((job) => job.id!) : null;
    }, 'every create job to be queued');
    const started = async () => {
      const jobs = await Promise.all(jobIds.map((id) => queue.getJob(id)));
      return jobs.reduce((n, job) => n + (job?.attemptsStarted ?? 0), 0);
    };

    const proxied = { ...env, MONGO_URL: proxy.url(new URL(t.config.MONGO_URL).pathname.slice(1)) };
    for (let round = 0; round < ROUNDS; round++) {
      for (const boundary of BOUNDARIES) {
        await killAt(proxied, boundary);
        // The killed job's account (and everything before the mark) is written, the mark is not.
        if (boundary.collection === 'account_import_processes')
          expect(await midCreation(), boundary.where).toBeGreaterThan(0);
      }
    }
    const kills = await killWorkersWhileTheyWork({
      kills: RANDOM_KILLS,
      env,
      windowMs: KILL_WINDOW_MS,
      children,
      started,
      done: () => answers.size === ACCOUNTS.length,
    });
    const survivor = startProcess('worker', env);
    children.push(survivor);
    await Promise.all(requests);

    expect(kills).toBe(RANDOM_KILLS);
    const big = payload('x');
    const expected = {
      accounts: 1,
      ledgers: big.ledgers.length,
      transactions: big.ledgers.reduce(
        (n, l) =>
          n +
          (l.historical_statement_transactions?.length ?? 0) +
          (l.current_statement_transactions?.length ?? 0),
        0,
      ),
      notes: big.notes.length,
      statements: big.statements.length,
      journalEntries: 1,
    };
    for (const ext of ACCOUNTS) {
      const res = answers.get(ext)!;
      expect(res.statusCode).toBe(201);
      expect(await recordCounts(t.app, ext)).toEqual(expected);
      const process = await t.app.db.models.AccountImportProcess.findOne({
        externalAccountNumber: ext,
      }).lean();
      expect(process!.krakenAccountNumber).toBe(res.json().kraken_account_number);
    }
    expect(await midCreation()).toBe(0);

    // The cohort's counters agree with what the crashes left (changes cut short between an event and its count
    // are repaired when progress is read): every account PROCESSED, none stuck IN_PROGRESS, and a rebuild from
    // the records finds no drift.
    const progress = async () =>
      (
        await t.app.inject({
          method: 'GET',
          url: `/v2/data-import/import-suppliers/${SUPPLIER}/progress/`,
          headers,
        })
      ).json() as { accounts: Record<string, number> };
    await until(
      async () => (await progress()).accounts.PROCESSED === ACCOUNTS.length,
      'the progress counting every account PROCESSED',
    );
    expect((await progress()).accounts).toMatchObject({
      total: ACCOUNTS.length,
      PROCESSED: ACCOUNTS.length,
      IN_PROGRESS: 0,
      PENDING: 0,
      ERRORED: 0,
    });
    expect(await t.ops.rebuildProgress(SUPPLIER)).toMatchObject({ drifted: false, differences: [] });
  },
);
