import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/admin/webhooks.js';
import { processKey } from '../../src/models/account-import-process.js';
import { storageFor } from '../../src/storage/index.js';
import { webhookStore } from '../../src/storage/webhooks.js';
import { relayEvents } from '../../src/webhooks/relay.js';
import { deliveryJobId, dispatchEvent, type DispatchedEvent } from '../../src/webhooks/dispatch-event.js';
import { DirectDeliveries } from '../../src/webhooks/direct-deliveries.js';
import { WebhookFleetState } from '../../src/webhooks/fleet-state.js';
import { startTestApp, createTenant, type TestApp } from '../support/app.js';
import { startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { receiverPool } from './receiver.js';

// First attempts made by the process that recorded the event (`DirectDeliveries`), and what happens when it
// cannot make one: the endpoint's places taken (a wait in line, then a job), an attempt not accepted (the retries are a job),
// the process gone mid-attempt (the outbox sweep gives the delivery a job once its attempt's time is up).
let t: TestApp;
let workers: TestWorkers;
let hooks: WebhookOperations;
const receivers = receiverPool();
const receiver = receivers.start;
const ORG = 'Direct Org';
const SUPPLIER = 'DIRECT_A';
const TIMEOUT_MS = 3_000;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'direct_hooks',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '100,100',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      OUTBOX_SWEEP_INTERVAL_MS: '1000',
    },
  });
  await createTenant(t, ORG, SUPPLIER);
  hooks = new WebhookOperations(t.app.db.models, t.config);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await receivers.closeAll();
  await t?.close();
});

let counter = 0;
/** Records a post-import event of an account of the supplier; relays it as the API does (unless told not to). */
async function emit(relay = true) {
  const org = await t.app.db.models.Organisation.findOne({ name: ORG }).lean();
  const external = `EXT-${++counter}`;
  const event = await storageFor(t.app.db.models).events.recordPostImport(
    {
      key: processKey(SUPPLIER, external),
      organisationId: org!._id,
      importSupplier: SUPPLIER,
      externalAccountNumber: external,
      krakenAccountNumber: 'A-0000000B',
    },
    {
      type: 'data_import.import_process.post_import.completed-v1',
      resource: 'notes',
      ref: `r${counter}`,
      count: 1,
    },
    new Date(),
  );
  if (relay)
    await relayEvents(t.app.queues.queue('webhooks'), [event], 'test', {
      models: t.app.db.models,
      dispatch: { redis: t.app.redis, prefix: t.config.QUEUE_PREFIX, clock: () => new Date() },
    });
  return event;
}

const deliveryOf = (id: string) => t.app.db.models.WebhookDelivery.findById(id).lean();
const webhookQueue = () => t.app.queues.queue('webhooks');

describe('direct deliveries', () => {
  it("the endpoint's places taken: the attempt waits for one as a job would, and takes one freed meanwhile", async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG, r.url);
    const fleet = new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX);
    // Both places held by deliveries elsewhere in the fleet; one is given back while the attempt waits.
    expect(await fleet.takeSlot(endpoint.id, 'elsewhere-1', 2, 60_000)).toBe(true);
    expect(await fleet.takeSlot(endpoint.id, 'elsewhere-2', 2, 60_000)).toBe(true);
    const event = await emit();
    const id = `${event.eventId}.${endpoint.id}`;
    expect(r.received).toHaveLength(0);
    await fleet.releaseSlot(endpoint.id, 'elsewhere-1');
    await until(async () => (await deliveryOf(id))?.status === 'delivered', 'delivered');
    expect(r.received.map((x) => x.id)).toEqual([event.eventId]);
    expect(await webhookQueue().getJobState(deliveryJobId(id))).toBe('unknown');
    await fleet.releaseSlot(endpoint.id, 'elsewhere-2');
    await hooks.remove(ORG, endpoint.id);
  });

  it('no place within the wait: the delivery gets its job, which delivers once a place is free', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG, r.url);
    const fleet = new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX);
    expect(await fleet.takeSlot(endpoint.id, 'elsewhere-1', 2, 60_000)).toBe(true);
    expect(await fleet.takeSlot(endpoint.id, 'elsewhere-2', 2, 60_000)).toBe(true);
    const event = await emit();
    const job = deliveryJobId(`${event.eventId}.${endpoint.id}`);
    await until(async () => (await webhookQueue().getJobState(job)) !== 'unknown', 'the delivery job');
    expect(r.received).toHaveLength(0);
    await fleet.releaseSlot(endpoint.id, 'elsewhere-1');
    await until(async () => (await webhookQueue().getJobState(job)) === 'completed', 'the delivery job done');
    expect((await webhookQueue().getJob(job))?.returnvalue).toEqual({ status: 'delivered', attempts: 1 });
    expect((await webhookQueue().getJob(job))?.data.fresh).toMatchObject({ endpointId: endpoint.id });
    expect(r.received.map((x) => x.id)).toEqual([event.eventId]);
    await fleet.releaseSlot(endpoint.id, 'elsewhere-2');
    await hooks.remove(ORG, endpoint.id);
  });

  it('a first attempt not accepted is recorded as the first; its retry is a delivery job', async () => {
    const r = await receiver((seen) => (seen === 0 ? 502 : 200));
    const endpoint = await hooks.add(ORG, r.url);
    const event = await emit();
    const id = `${event.eventId}.${endpoint.id}`;
    await until(
      async () => (await webhookQueue().getJobState(deliveryJobId(id))) === 'completed',
      'the retry',
    );
    expect((await webhookQueue().getJob(deliveryJobId(id)))?.returnvalue).toEqual({
      status: 'delivered',
      attempts: 2,
    });
    expect(await deliveryOf(id)).toMatchObject({ status: 'delivered', attempts: 2, lastHttpStatus: 200 });
    expect(r.received.map((x) => x.id)).toEqual([event.eventId, event.eventId]);
    await hooks.remove(ORG, endpoint.id);
  });

  it('a process gone mid-attempt: the sweep gives its delivery a job once the attempt’s time is up', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG, r.url);
    const event = await emit(false);
    // What a dispatch with a direct attempt leaves when its process dies during the send: the delivery
    // pending, due when the attempt's time is up, no job, and the event marked dispatched.
    const store = webhookStore(t.app.db.models);
    const now = new Date();
    const due = new Date(now.getTime() + TIMEOUT_MS);
    await store.markDispatched(event._id);
    const [row] = await store.liveEndpoints(event.organisationId!);
    const [delivery] = await store.createDeliveries(
      event as Parameters<typeof store.createDeliveries>[0],
      [row!],
      now,
      due,
    );
    expect(delivery!.inserted).toBe(true);
    await until(
      async () => (await deliveryOf(delivery!.id))?.status === 'delivered',
      'delivered by the sweep’s job',
    );
    // Not before its attempt's time was up (an attempt still running then is not doubled).
    expect(r.received.map((x) => x.id)).toEqual([event.eventId]);
    expect(r.received[0]!.receivedAt).toBeGreaterThanOrEqual(due.getTime());
    await hooks.remove(ORG, endpoint.id);
  });

  it('drain waits for the attempts in flight, their outcome recorded (what the API and workers do on shutdown)', async () => {
    // A receiver that holds every request until told to answer.
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => held.push(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    try {
      const endpoint = await hooks.add(ORG, url);
      const event = await emit(false);
      const store = webhookStore(t.app.db.models);
      const [row] = await store.liveEndpoints(event.organisationId!);
      // A process's own direct deliveries, as the API and the workers attach them at boot.
      const direct = new DirectDeliveries({
        config: t.config,
        log: t.app.log,
        redis: t.app.redis,
        clock: () => new Date(),
      });
      await dispatchEvent(
        {
          store,
          redis: t.app.redis,
          prefix: t.config.QUEUE_PREFIX,
          queue: webhookQueue(),
          clock: () => new Date(),
        },
        event as DispatchedEvent,
        [row!],
        'test',
        { body: event.body!, deliveries: direct },
      );
      const id = `${event.eventId}.${endpoint.id}`;
      await until(async () => held.length === 1, 'the request held');
      let drained = false;
      const draining = direct.drain().then(() => (drained = true));
      await t.app.redis.ping();
      expect(drained).toBe(false);
      held[0]!.writeHead(204).end();
      await draining;
      expect(await deliveryOf(id)).toMatchObject({ status: 'delivered', attempts: 1, lastHttpStatus: 204 });
      expect(await webhookQueue().getJobState(deliveryJobId(id))).toBe('unknown');
      await hooks.remove(ORG, endpoint.id);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
