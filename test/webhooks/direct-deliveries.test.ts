import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { relayEvents } from '../../src/use-cases/webhooks/relay.js';
import { deliveryJobId } from '../../src/jobs/catalog.js';
import type { DispatchedEvent } from '../../src/storage/webhooks/webhook-outbox.js';
import { dispatchEvent } from '../../src/use-cases/webhooks/dispatch-event.js';
import { directAttemptMs } from '../../src/use-cases/webhooks/direct-deliveries.js';
import { WebhookFleetState } from '../../src/use-cases/webhooks/fleet-state.js';
import { createWebhookProcess, type WebhookProcess } from '../../src/use-cases/webhooks/webhook-process.js';
import { startTestApp, createTenant, type TestApp } from '../support/app.js';
import { startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { receiverPool } from './receiver.js';

// First attempts made by the process that recorded the event (`DirectDeliveries`), before the deliveries are
// written, and what happens when it cannot make one: the endpoint's places taken (a wait in line, then a job),
// an attempt not accepted (the retries are a job), the process gone mid-attempt (the outbox sweep dispatches
// the event once the attempts' time is up), a delivery written meanwhile by another dispatch (kept).
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
  hooks = new WebhookOperations(t.app.storage, t.config);
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
  const event = await t.app.storage.events.recordPostImport(
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
      store: t.app.storage.webhooks,
      dispatch: t.app.webhooks,
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

  it('a process gone mid-attempt: the sweep dispatches its event once the attempts’ time is up', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG, r.url);
    // What a dispatch with direct attempts leaves when its process dies during the send: the event recorded,
    // still undispatched, and no delivery written yet.
    const event = await emit(false);
    expect(event.dispatched).toBe(false);
    const id = `${event.eventId}.${endpoint.id}`;
    await until(
      async () => (await deliveryOf(id))?.status === 'delivered',
      'delivered by the sweep’s dispatch',
    );
    expect(r.received.map((x) => x.id)).toEqual([event.eventId]);
    // Not before the attempts' time was up (attempts still running then are not doubled).
    expect(r.received[0]!.receivedAt).toBeGreaterThanOrEqual(
      event.occurredAt!.getTime() + directAttemptMs(t.config),
    );
    await hooks.remove(ORG, endpoint.id);
  });

  /** A receiver that holds every request until told to answer, and a dispatch with its own direct deliveries. */
  async function heldDispatch(run: (held: ServerResponse[], url: string) => Promise<void>) {
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => held.push(res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run(held, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }

  /** Dispatches a new event with `own`'s direct deliveries, a process's own as the API and workers build them. */
  async function dispatchDirect(own: WebhookProcess) {
    const event = await emit(false);
    const store = t.app.storage.webhooks;
    const [row] = await store.endpoints.live(event.organisationId!);
    const deps = { store, fleet: own.fleet, queue: webhookQueue(), clock: () => new Date() };
    await dispatchEvent(deps, event as DispatchedEvent, [row!], 'test', {
      body: event.body!,
      deliveries: own.direct,
    });
    return { event, row: row!, store };
  }

  const ownProcess = () =>
    createWebhookProcess({ config: t.config, log: t.app.log, redis: t.app.redis, clock: () => new Date() });
  const undispatched = (key: string) => t.app.storage.webhooks.outbox.undispatched(key);

  it('drain waits for the events in flight, their deliveries written after the attempt (what the API and workers do on shutdown)', async () => {
    await heldDispatch(async (held, url) => {
      const endpoint = await hooks.add(ORG, url);
      const own = ownProcess();
      const { event } = await dispatchDirect(own);
      const id = `${event.eventId}.${endpoint.id}`;
      await until(async () => held.length === 1, 'the request held');
      let drained = false;
      const draining = own.drain().then(() => (drained = true));
      // During the attempt: no delivery written yet, the event not marked.
      expect(await deliveryOf(id)).toBeNull();
      expect(await undispatched(event._id)).toBe(true);
      expect(drained).toBe(false);
      held[0]!.writeHead(204).end();
      await draining;
      expect(await deliveryOf(id)).toMatchObject({
        status: 'delivered',
        attempts: 1,
        lastHttpStatus: 204,
        nextAttemptAt: null,
      });
      expect(await undispatched(event._id)).toBe(false);
      expect(await webhookQueue().getJobState(deliveryJobId(id))).toBe('unknown');
      await hooks.remove(ORG, endpoint.id);
    });
  });

  it('a delivery written by another dispatch during the attempt is kept as it is: the attempt queues nothing for it', async () => {
    await heldDispatch(async (held, url) => {
      const endpoint = await hooks.add(ORG, url);
      const own = ownProcess();
      const { event, row, store } = await dispatchDirect(own);
      const id = `${event.eventId}.${endpoint.id}`;
      await until(async () => held.length === 1, 'the request held');
      // Another dispatch of the same event (the sweep's, had the attempt overrun its time) writes first.
      const [other] = await store.deliveries.create(event as DispatchedEvent, [row], new Date());
      expect(other!.inserted).toBe(true);
      held[0]!.writeHead(204).end();
      await own.drain();
      expect(await deliveryOf(id)).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await webhookQueue().getJobState(deliveryJobId(id))).toBe('unknown');
      expect(await undispatched(event._id)).toBe(false);
      await hooks.remove(ORG, endpoint.id);
    });
  });
});
