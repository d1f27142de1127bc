import { Queue } from 'bullmq';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { childEnv, killWorkersWhileTheyWork, startProcess, type Child } from './processes.js';
import { apiFor, recordCounts, setupTenant, SUPPLIER, until, type Api } from './support.js';

// A worker process SIGKILLed at random moments while it creates accounts; the job is picked up again by the
// next worker (short locks so a dead worker's job is noticed quickly) and must converge on one of everything.
// One job at a time per worker and enough accounts that the kills run out before the work does. A fresh
// worker's first creation is slow (cold code, first connections), later ones of the realistic account take
// about 10 ms, so a kill up to 250 ms after the first job turned active lands anywhere from inside that first
// job to a few jobs later: before, between or after the writes.
const KILLS = 20;
const ACCOUNTS = Array.from({ length: 300 }, (_, i) => `CRASH-${i + 1}`);
const KILL_WINDOW_MS = 250;

let t: TestApp;
let api: Api;
let queue: Queue;
let connection: Redis;
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
  api = apiFor(t, (await setupTenant(t)).headers);
  connection = new Redis(t.config.REDIS_URL, { maxRetriesPerRequest: null });
  queue = new Queue('account-creation', { connection, prefix: t.config.QUEUE_PREFIX });
});
afterAll(async () => {
  for (const c of children) await c.stop('SIGKILL');
  await queue?.close();
  connection?.disconnect();
  await t?.close();
});

function payload(external: string) {
  return { ...realisticAccountPayload(), import_supplier: SUPPLIER, external_account_number: external };
}

it(
  `ends with exactly one account and one copy of each record after ${KILLS} SIGKILLs of the worker`,
  { timeout: 300_000 },
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

    let midCreation = 0;
    const kills = await killWorkersWhileTheyWork({
      kills: KILLS,
      env,
      windowMs: KILL_WINDOW_MS,
      children,
      started,
      done: () => answers.size === ACCOUNTS.length,
      afterKill: async () => {
        const partial = await t.app.db.models.Account.countDocuments({ importSupplier: SUPPLIER });
        const imported = await t.app.db.models.AccountImportProcess.countDocuments({
          krakenAccountNumber: { $ne: null },
        });
        if (partial > imported) midCreation++;
      },
    });
    const survivor = startProcess('worker', env);
    children.push(survivor);
    await Promise.all(requests);

    expect(kills).toBe(KILLS);
    // Some kills landed between the account insert and the final mark (the interesting window).
    expect(midCreation).toBeGreaterThan(0);
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
      expect(await recordCounts(t.app.db, ext)).toEqual(expected);
      const process = await t.app.db.models.AccountImportProcess.findOne({
        externalAccountNumber: ext,
      }).lean();
      expect(process!.krakenAccountNumber).toBe(res.json().kraken_account_number);
    }
    console.info(`crash-safety: ${kills} kills, ${midCreation} observed mid-creation`);
  },
);
