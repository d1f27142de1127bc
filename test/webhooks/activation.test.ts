import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { relayEvents } from '../../src/use-cases/webhooks/relay.js';
import { startTestApp, createTenant, type TestApp } from '../support/app.js';
import { startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { startReceiver, type Receiver } from './receiver.js';

// An endpoint receives the events that occur from a delay after `webhook add`; event writers remember an
// organisation's endpoints for half of it. Events are recorded here at chosen times (their writer's clock),
// so nothing waits for the delay to pass.
const ORG = 'Activation Org';
const SUPPLIER = 'ACTIVATION';
const REMOVAL_ORG = 'Removal Org';
const REMOVAL_SUPPLIER = 'REMOVAL';
const DELAY_MS = 60_000;

let t: TestApp;
let workers: TestWorkers;
let hooks: WebhookOperations;
let receiver: Receiver;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'webhook_activation',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_ACTIVATION_DELAY_MS: String(DELAY_MS),
      WEBHOOK_RETRY_DELAYS_MS: '100',
    },
  });
  await createTenant(t, ORG, SUPPLIER);
  await createTenant(t, REMOVAL_ORG, REMOVAL_SUPPLIER);
  hooks = new WebhookOperations(t.app.storage, t.config);
  workers = await startTestWorkers(t.config);
  receiver = await startReceiver();
});
afterAll(async () => {
  await workers?.stop();
  await receiver?.close();
  await t?.close();
});

let counter = 0;
/**
 * Records a post-import event occurring at `at`, and relays it (with `direct`, as the API does: dispatched
 * and first sent from this process; else by a dispatch job).
 */
async function recordAt(at: Date, { org = ORG, supplier = SUPPLIER, direct = false } = {}) {
  const organisation = await t.app.db.models.Organisation.findOne({ name: org }).lean();
  const external = `ACT-${++counter}`;
  const event = await t.app.storage.events.recordPostImport(
    {
      key: processKey(supplier, external),
      organisationId: organisation!._id,
      importSupplier: supplier,
      externalAccountNumber: external,
      krakenAccountNumber: 'A-0000000B',
    },
    {
      type: 'data_import.import_process.post_import.completed-v1',
      resource: 'notes',
      ref: external,
      count: 1,
    },
    at,
  );
  await relayEvents(t.app.queues.queue('webhooks'), [event], 'test', {
    store: t.app.storage.webhooks,
    ...(direct ? { dispatch: t.app.webhooks } : {}),
  });
  return event;
}

describe('webhook activation', () => {
  it('an endpoint gets the events from its activation on, though writers remembered there was none', async () => {
    const reads = vi.spyOn(t.app.storage.webhooks.endpoints, 'live');
    const start = Date.now();
    // Nobody subscribed: written dispatched, and what was read is remembered for half the delay.
    const before = await recordAt(new Date(start));
    expect(before.dispatched).toBe(true);
    const added = await hooks.add(ORG, receiver.url);
    const activeFrom = Date.parse(added.active_from);
    expect(activeFrom - start).toBeGreaterThanOrEqual(DELAY_MS);
    expect(activeFrom - Date.now()).toBeLessThanOrEqual(DELAY_MS);
    expect((await hooks.list(ORG)).map((e) => e.active_from)).toEqual([added.active_from]);

    // Before its activation, from what the writer remembered (no read): not the endpoint's.
    const early = await recordAt(new Date(start + DELAY_MS / 4));
    expect(early.dispatched).toBe(true);
    expect(reads).toHaveBeenCalledTimes(1);

    // From its activation on (past what the writer may remember): read again, and delivered.
    const due = await recordAt(new Date(activeFrom));
    expect(due.dispatched).toBe(false);
    expect(reads).toHaveBeenCalledTimes(2);
    await until(async () => receiver.ids().has(due.eventId), 'the delivery of the first event it is due');
    const later = await recordAt(new Date(activeFrom + 1_000));
    await until(async () => receiver.ids().has(later.eventId), 'the delivery of the next one');
    expect(reads).toHaveBeenCalledTimes(2);
    expect(receiver.ids().has(before.eventId) || receiver.ids().has(early.eventId)).toBe(false);
    reads.mockRestore();
  });

  it('active_from is the database server’s time plus the service’s delay, whatever the adding process’s clock says', async () => {
    const serverTime = async () =>
      ((await t.app.db.conn.db!.command({ hello: 1 })) as { localTime: Date }).localTime.getTime();
    const before = await serverTime();
    // The operator's machine is an hour behind.
    const realNow = Date.now.bind(Date);
    const skewed = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 3_600_000);
    let added: Awaited<ReturnType<WebhookOperations['add']>>;
    try {
      added = await hooks.add(ORG, receiver.url, ['data_import.import_process.error-v1']);
    } finally {
      skewed.mockRestore();
    }
    const after = await serverTime();
    const activeFrom = Date.parse(added.active_from);
    expect(activeFrom).toBeGreaterThanOrEqual(before + DELAY_MS);
    expect(activeFrom).toBeLessThanOrEqual(after + DELAY_MS);
    // Added at the server's time too, and listed so.
    const listed = (await hooks.list(ORG)).find((e) => e.id === added.id)!;
    expect(Date.parse(listed.created_at!)).toBe(activeFrom - DELAY_MS);
    expect(listed.active_from).toBe(added.active_from);
    await hooks.remove(ORG, added.id);
  });

  it('a removed endpoint: first sends of events written while writers still remember it (half the delay at most), none after, no retries', async () => {
    const at = { org: REMOVAL_ORG, supplier: REMOVAL_SUPPLIER, direct: true };
    let refuse = false;
    const r = await startReceiver(() => (refuse ? 503 : 200));
    try {
      const added = await hooks.add(REMOVAL_ORG, r.url);
      const activeFrom = Date.parse(added.active_from);
      const reads = vi.spyOn(t.app.storage.webhooks.endpoints, 'live');
      // Read once at its activation and remembered: delivered from this process.
      const first = await recordAt(new Date(activeFrom), at);
      await until(async () => r.ids().has(first.eventId), 'the first event');
      await hooks.remove(REMOVAL_ORG, added.id);
      refuse = true;
      // Within what the writer remembers: sent once (no read), refused, and its retry not made (the delivery
      // job reads the endpoint: removed).
      const remembered = await recordAt(new Date(activeFrom + 1_000), at);
      const id = `${remembered.eventId}.${added.id}`;
      await until(
        async () => (await t.app.db.models.WebhookDelivery.findById(id).lean())?.status === 'failed',
        'the retry given up',
      );
      expect(r.received.filter((x) => x.id === remembered.eventId)).toHaveLength(1);
      // Past it: read again, nobody subscribed, written dispatched (nothing will be sent).
      const after = await recordAt(new Date(activeFrom + DELAY_MS / 2), at);
      expect(after.dispatched).toBe(true);
      expect(reads).toHaveBeenCalledTimes(2);
      reads.mockRestore();
    } finally {
      await r.close();
    }
  });
});
