import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { childEnv, killWorkersWhileTheyWork, startProcess, type Child } from '../creation/processes.js';
import { recordCounts, setupTenant, SUPPLIER, TEAM, until } from '../creation/support.js';
import { v2For, type V2 } from './support.js';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { workerConnection, type RedisClient } from '../../src/infra/redis.js';

// Worker processes SIGKILLed at random moments while they run scheduled tasks: a killed worker's task runs
// again (short locks, so the stall is noticed quickly), resumes its own STARTED, and every account ends
// created exactly once with exactly one PROCESSED in its history.
const KILLS = 8;
const ACCOUNTS = Array.from({ length: 100 }, (_, i) => `SCRASH-${i + 1}`);
const KILL_WINDOW_MS = 250;

let t: TestApp;
let v2: V2;
let queue: Queue;
let connection: RedisClient;
let receiver: Receiver;
const ORG = 'Crash Org';
const children: Child[] = [];

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'v2-crash',
      ACCOUNT_CREATION_SLOT_LEASE_MS: '2000',
      ACCOUNT_CREATION_CONCURRENCY: '0',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  });
  v2 = v2For(t, (await setupTenant(t, ORG)).headers);
  receiver = await startReceiver();
  await new WebhookOperations(t.app.storage, t.config).add(ORG, receiver.url);
  connection = workerConnection(t.config);
  queue = new Queue('account-creation', {
    connection,
    prefix: redisKeys(t.config.QUEUE_PREFIX).queuePrefix('account-creation'),
  });
});
afterAll(async () => {
  for (const c of children) await c.stop('SIGKILL');
  await receiver?.close();
  await queue?.close();
  connection?.disconnect();
  await t?.close();
});

it(
  `scheduled tasks survive ${KILLS} SIGKILLs of the worker: one account and one PROCESSED each`,
  { timeout: 900_000 },
  async () => {
    for (const ext of ACCOUNTS) {
      const payload = {
        ...realisticAccountPayload(),
        import_supplier: SUPPLIER,
        external_account_number: ext,
      };
      expect((await v2.schedule({ ...payload, operations_team_name: TEAM })).statusCode).toBe(201);
    }
    // CREATED is position 0, so each account's task is position 1.
    const jobIds = ACCOUNTS.map((ext) => taskJobId(processKey(SUPPLIER, ext), 1));
    const started = async () => {
      const jobs = await Promise.all(jobIds.map((id) => queue.getJob(id)));
      return jobs.reduce((n, job) => n + (job?.attemptsStarted ?? 0), 0);
    };
    const models = t.app.db.models;
    const imported = () =>
      models.AccountImportProcess.countDocuments({
        importSupplier: SUPPLIER,
        krakenAccountNumber: { $ne: null },
      });
    const env = childEnv(t.config, {
      WORKER_LOCK_DURATION_MS: '1000',
      WORKER_STALLED_INTERVAL_MS: '300',
      WORKER_MAX_STALLED_COUNT: '1000',
      WORKER_CONCURRENCY: '1',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '200,200,200,200,200',
    });

    const kills = await killWorkersWhileTheyWork({
      kills: KILLS,
      env,
      windowMs: KILL_WINDOW_MS,
      children,
      started,
      done: async () => (await imported()) === ACCOUNTS.length,
    });
    // The survivor works at full concurrency: the interesting part (the kills) is over.
    children.push(startProcess('worker', { ...env, WORKER_CONCURRENCY: '50' }));
    await until(async () => (await imported()) === ACCOUNTS.length, 'every account to be created', 600_000);

    expect(kills).toBe(KILLS);
    const events = t.app.storage.events;
    for (const ext of ACCOUNTS) {
      expect((await recordCounts(t.app, ext)).accounts).toBe(1);
      const history = await events.history(processKey(SUPPLIER, ext));
      const kinds = history.map((e) => e.kind);
      expect(kinds.filter((k) => k === 'PROCESSED')).toHaveLength(1);
      expect(kinds).not.toContain('ERRORED');
      expect(kinds.slice(0, 3)).toEqual(['CREATED', 'SCHEDULED', 'STARTED']);
      expect((await v2.status(ext)).json().status).toBe('PROCESSED');
    }
    // Deliveries were in flight through the kills too: every account's complete-v1 arrived, and a duplicate
    // (at least once) only ever repeats the same webhook-id.
    const completeIds = () => {
      const byAccount = new Map<string, Set<string>>();
      for (const r of receiver.received) {
        const body = JSON.parse(r.body) as { type: string; data: { external_account_number: string } };
        if (body.type !== 'data_import.import_process.complete-v1') continue;
        const ids = byAccount.get(body.data.external_account_number) ?? new Set<string>();
        ids.add(r.id);
        byAccount.set(body.data.external_account_number, ids);
      }
      return byAccount;
    };
    await until(async () => completeIds().size === ACCOUNTS.length, 'every complete-v1');
    expect([...completeIds().values()].every((ids) => ids.size === 1)).toBe(true);
  },
);
