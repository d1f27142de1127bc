import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { processEventId } from '../../src/storage/models/import-event.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  TEAM,
  until,
  type TestWorkers,
} from '../creation/support.js';
import { eventNames, inMs, v2For, type V2 } from './support.js';
import { Webhook } from 'standardwebhooks';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { startReceiver } from '../webhooks/receiver.js';
import { redisKeys } from '../../src/infra/redis-keys.js';

// Scheduled tasks share the global creation limit with v1 creates: they wait for a slot (never refused) and
// end ERRORED schedule_window_expired when none frees up before their window ends.
let t: TestApp;
let v2: V2;
const workers: TestWorkers[] = [];
const withTeam = (external: string) => ({ ...accountPayload(external), operations_team_name: TEAM });
const LIMIT = 50;
const ORG = 'Limit Org';

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'v2-limit',
      ACCOUNT_CREATION_CONCURRENCY: String(LIMIT),
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  });
  v2 = v2For(t, (await setupTenant(t, ORG)).headers);
  // Two worker processes' worth of concurrency (2 × 50): the limit, not the workers, binds.
  for (let i = 0; i < 2; i++) workers.push(await startTestWorkers(t.config));
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await t?.close();
});

const statusOf = async (external: string) => (await v2.status(external)).json();

describe('the global creation limit', () => {
  it('a task whose window ends while the limit is full is ERRORED schedule_window_expired; a wider one waits and runs', async () => {
    const slots = new CreationSlots(t.app.redis, t.config);
    const held = Array.from({ length: LIMIT }, (_, i) => `HOLDER/${i}`);
    for (const member of held) expect((await slots.acquire(member, 'api')).status).toBe('taken');
    const renewals = held.map((member) => slots.keepAlive(member));
    try {
      expect((await v2.schedule(withTeam('EXP-1'), { schedule_window_end: inMs(2_000) })).statusCode).toBe(
        201,
      );
      expect((await v2.schedule(withTeam('WAIT-1'))).statusCode).toBe(201);
      const expired = await until(async () => {
        const body = await statusOf('EXP-1');
        return body.status === 'ERRORED' ? body : null;
      }, 'the window to expire');
      expect(expired).toMatchObject({
        kraken_identifier: null,
        latest_error: { code: 'schedule_window_expired', domain: 'import_process' },
        latest_event: { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED' },
      });
      expect(eventNames((await v2.events('EXP-1')).json())).toEqual(['CREATED', 'SCHEDULED', 'ERRORED']);
      // Still waiting for a slot, not refused.
      expect((await statusOf('WAIT-1')).status).toBe('PENDING');
    } finally {
      for (const stop of renewals) stop();
      for (const member of held) await slots.release(member);
    }
    await until(async () => (await statusOf('WAIT-1')).status === 'PROCESSED', 'the waiting task to run');
    expect(await t.app.db.models.Account.exists({ externalAccountNumber: 'EXP-1' })).toBeNull();
  });

  it(
    `1,000 scheduled accounts with the limit at ${LIMIT}: never more in flight, all PROCESSED once, one signed complete-v1 each`,
    { timeout: 1_200_000 },
    async () => {
      const receiver = await startReceiver();
      const endpoint = await new WebhookOperations(t.app.storage, t.config).add(ORG, receiver.url, [
        'data_import.import_process.complete-v1',
      ]);
      const slots = new CreationSlots(t.app.redis, t.config);
      await t.app.redis.del(redisKeys(t.config.QUEUE_PREFIX).creationSlots.peak);
      const externals = Array.from({ length: 1_000 }, (_, i) => `BULK-${String(i).padStart(4, '0')}`);
      // Scheduled in parallel batches, as a migration script would.
      for (let i = 0; i < externals.length; i += 50) {
        const answers = await Promise.all(externals.slice(i, i + 50).map((e) => v2.schedule(withTeam(e))));
        for (const res of answers) expect(res.statusCode).toBe(201);
      }
      const models = t.app.db.models;
      await until(
        async () =>
          (await models.AccountImportProcess.countDocuments({
            importSupplier: SUPPLIER,
            externalAccountNumber: { $regex: '^BULK-' },
            krakenAccountNumber: { $ne: null },
          })) === externals.length,
        'every account to be created',
        600_000,
      );
      expect(await slots.peak()).toBeLessThanOrEqual(LIMIT);
      expect(await slots.peak()).toBeGreaterThan(1);
      expect(await models.Account.countDocuments({ externalAccountNumber: { $regex: '^BULK-' } })).toBe(
        externals.length,
      );
      // Exactly one PROCESSED per account, at its fourth position (CREATED, SCHEDULED, STARTED, PROCESSED).
      const processed = await Promise.all(
        externals.map((e) => models.ImportEvent.findById(processEventId(processKey(SUPPLIER, e), 3)).lean()),
      );
      expect(processed.every((doc) => doc?.event === 'PROCESSED')).toBe(true);
      expect(
        await Promise.all(
          externals.map((e) =>
            models.ImportEvent.exists({ _id: processEventId(processKey(SUPPLIER, e), 4) }),
          ),
        ),
      ).toEqual(externals.map(() => null));

      // Exactly one complete-v1 per account at the receiver, each verified by its signature.
      await until(async () => receiver.ids().size >= externals.length, 'every complete-v1', 600_000);
      const verifier = new Webhook(endpoint.secret);
      const byAccount = new Map<string, Set<string>>();
      // Each is verified as the receiver would have on arrival: its timestamp within 5 minutes of then (the run
      // itself may last longer than that on a slow machine).
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        for (const r of receiver.received) {
          vi.setSystemTime(r.receivedAt);
          const body = verifier.verify(r.body, {
            'webhook-id': r.id,
            'webhook-timestamp': String(r.headers['webhook-timestamp']),
            'webhook-signature': String(r.headers['webhook-signature']),
          }) as { id: string; type: string; data: { external_account_number: string } };
          expect(body.type).toBe('data_import.import_process.complete-v1');
          expect(body.id).toBe(r.id);
          const ids = byAccount.get(body.data.external_account_number) ?? new Set<string>();
          ids.add(r.id);
          byAccount.set(body.data.external_account_number, ids);
        }
      } finally {
        vi.useRealTimers();
      }
      const bulk = [...byAccount.entries()].filter(([e]) => e.startsWith('BULK-'));
      expect(bulk).toHaveLength(externals.length);
      expect(bulk.every(([, ids]) => ids.size === 1)).toBe(true);
      await receiver.close();
    },
  );
});
