import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { LEGACY_SCAN_ID } from '../../src/storage/models/webhook-outbox.js';
import { ProcessEventLog } from '../../src/storage/processes/process-events.js';
import { jobId } from '../../src/jobs/catalog.js';
import { relayEvents } from '../../src/use-cases/webhooks/relay.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { deliveryJobId } from '../../src/jobs/catalog.js';
import { openSecret } from '../../src/use-cases/webhooks/secret-box.js';
import {
  isPublicAddress,
  checkWebhookUrl,
  WebhookLookupTimeout,
} from '../../src/use-cases/webhooks/url-guard.js';
import { startTestApp, createTenant, type TestApp } from '../support/app.js';
import { startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { receiverPool } from './receiver.js';

// Delivery of import events to real HTTP receivers: signatures, retries on the configured delays, failure and
// replay, per-endpoint isolation, tenant isolation, type filters and the outbox sweep.
let t: TestApp;
let workers: TestWorkers;
let hooks: WebhookOperations;
const receivers = receiverPool();
const receiver = receivers.start;
const ORG_A = 'Hooks Org A';
const ORG_B = 'Hooks Org B';

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'webhooks',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_DELAYS_MS: '100,100,100',
      WEBHOOK_TIMEOUT_MS: '1000',
      WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      OUTBOX_SWEEP_INTERVAL_MS: '500',
      // Few workers: a slow endpoint could take all of them but for the per-endpoint cap.
      WORKER_CONCURRENCY: '4',
    },
  });
  await createTenant(t, ORG_A, 'HOOKS_A');
  await createTenant(t, ORG_B, 'HOOKS_B');
  hooks = new WebhookOperations(t.app.storage, t.config);
  workers = await startTestWorkers(t.config);
});
// A test that failed before removing its endpoints must not send its subscriptions into the next tests.
afterEach(async () => {
  for (const org of [ORG_A, ORG_B])
    for (const endpoint of await hooks.list(org)) await hooks.remove(org, endpoint.id);
});
afterAll(async () => {
  await workers?.stop();
  await receivers.closeAll();
  await t?.close();
});

/** The outbox sweep's dispatch jobs of an event (each round's has an id of its own). */
async function sweptDispatches(eventKey: string): Promise<number> {
  const jobs = await t.app.queues
    .queue('webhooks')
    .getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'], 0, -1);
  return jobs.filter(
    (j) => j?.name === 'dispatch-event' && j.id?.includes('-sweep-') && j.data.eventKey === eventKey,
  ).length;
}

let counter = 0;
/** Records a post-import event of an account of the organisation's supplier, and relays it (unless told not to). */
async function emit(
  org: string,
  options: { relay?: boolean; type?: 'completed' | 'error'; byJob?: boolean } = {},
) {
  const orgDoc = await t.app.db.models.Organisation.findOne({ name: org }).lean();
  const supplier = org === ORG_A ? 'HOOKS_A' : 'HOOKS_B';
  const external = `EXT-${++counter}`;
  const event = await t.app.storage.events.recordPostImport(
    {
      key: processKey(supplier, external),
      organisationId: orgDoc!._id,
      importSupplier: supplier,
      externalAccountNumber: external,
      krakenAccountNumber: 'A-0000000A',
    },
    {
      type:
        options.type === 'error'
          ? 'data_import.import_process.post_import.error-v1'
          : 'data_import.import_process.post_import.completed-v1',
      resource: 'notes',
      ref: `r${counter}`,
      count: 2,
    },
    new Date(),
  );
  // As the API and the workers relay: an event with subscribers is dispatched by the relay itself.
  if (options.relay !== false)
    await relayEvents(t.app.queues.queue('webhooks'), [event], 'test', {
      store: t.app.storage.webhooks,
      ...(options.byJob ? {} : { dispatch: t.app.webhooks }),
    });
  const doc = await t.app.db.models.ImportEvent.findById(event._id).lean();
  return {
    recorded: event,
    eventId: event.eventId,
    key: event._id,
    organisationId: orgDoc!._id,
    occurredAt: doc!.occurredAt,
    body: doc!.body!,
  };
}

const deliveryOf = (eventId: string, endpointId: string) =>
  t.app.db.models.WebhookDelivery.findById(`${eventId}.${endpointId}`).lean();

/** Takes an event off the outbox (its own entry, or the page holding it): as an earlier version wrote it. */
async function dropCover(key: string) {
  const { WebhookOutbox } = t.app.db.models;
  await WebhookOutbox.deleteOne({ _id: key });
  for (const page of await WebhookOutbox.find({ keys: key }).lean()) {
    const keys = page.keys!.filter((k) => k !== key);
    if (keys.length === 0) await WebhookOutbox.deleteOne({ _id: page._id });
    else await WebhookOutbox.updateOne({ _id: page._id }, { $set: { keys } });
  }
}

describe('delivery', () => {
  it('sends the recorded body signed with the Standard Webhooks scheme; the receiver verifies it', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const { eventId, key, body } = await emit(ORG_A);
    await until(async () => r.received.length > 0, 'the delivery');
    const got = r.received[0]!;
    expect(got.id).toBe(eventId);
    expect(got.body).toBe(body);
    expect(got.headers['content-type']).toBe('application/json');
    const verified = new Webhook(endpoint.secret).verify(got.body, {
      'webhook-id': got.headers['webhook-id'] as string,
      'webhook-timestamp': got.headers['webhook-timestamp'] as string,
      'webhook-signature': got.headers['webhook-signature'] as string,
    }) as { id: string; type: string; data: Record<string, unknown> };
    expect(verified).toMatchObject({
      id: eventId,
      type: 'data_import.import_process.post_import.completed-v1',
      data: { import_supplier: 'HOOKS_A', resource: 'notes', count: 2, kraken_account_number: 'A-0000000A' },
    });
    // A wrong secret does not verify.
    expect(() =>
      new Webhook(`whsec_${Buffer.from('x'.repeat(32)).toString('base64')}`).verify(got.body, {
        'webhook-id': got.id,
        'webhook-timestamp': got.headers['webhook-timestamp'] as string,
        'webhook-signature': got.headers['webhook-signature'] as string,
      }),
    ).toThrow();
    await until(async () => (await deliveryOf(eventId, endpoint.id))?.status === 'delivered', 'delivered');
    expect(await deliveryOf(eventId, endpoint.id)).toMatchObject({ attempts: 1, lastHttpStatus: 200 });
    // Marked dispatched once its deliveries are written: right after, not before.
    await until(async () => !(await t.app.storage.webhooks.outbox.undispatched(key)), 'marked dispatched');
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('an event with subscribers is dispatched by its relay and first sent from its process: no job at all', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    const queue = t.app.queues.queue('webhooks');
    // A process stalled longer than the first attempts' time (`directAttemptMs`, 2 s here, plus the sweep's
    // grace) has its event taken over by the outbox sweep, as one whose process died: the sweep's dispatch job
    // then queues the delivery's job. So up to three events: any sent by a job must have been taken over by the
    // sweep, and one must go through with no job at all.
    let direct = false;
    for (let tries = 0; tries < 3 && !direct; tries++) {
      const { eventId, key } = await emit(ORG_A);
      // Dispatched by its relay, with no dispatch job: the delivery written after its first attempt, then the
      // event marked.
      expect(await queue.getJobState(jobId('dispatch', eventId))).toBe('unknown');
      await until(async () => (await deliveryOf(eventId, endpoint.id))?.status === 'delivered', 'delivered');
      await until(
        async () => !(await t.app.storage.webhooks.outbox.undispatched(key)),
        'the event marked dispatched (its outbox entry gone)',
      );
      expect(await queue.getJobState(jobId('dispatch', eventId))).toBe('unknown');
      expect(await deliveryOf(eventId, endpoint.id)).toMatchObject({ attempts: 1, lastHttpStatus: 200 });
      // Its first attempt was this process's: no delivery job either.
      direct = (await queue.getJobState(deliveryJobId(`${eventId}.${endpoint.id}`))) === 'unknown';
      if (direct) expect(r.received.filter((x) => x.id === eventId)).toHaveLength(1);
      else
        expect(await sweptDispatches(key), `event ${eventId} sent by a job, not taken over`).toBeGreaterThan(
          0,
        );
    }
    expect(direct, 'an event sent from its process with no job at all').toBe(true);

    // Relayed without the means to dispatch (a caller that gives none): the dispatch job does it, reading the
    // event and the endpoints; its delivery is fresh all the same (inserted by that dispatch).
    const byJob = await emit(ORG_A, { byJob: true });
    await until(
      async () => (await deliveryOf(byJob.eventId, endpoint.id))?.status === 'delivered',
      'delivered',
    );
    expect(await queue.getJobState(jobId('dispatch', byJob.eventId))).toBe('completed');
    // The delivery record says delivered before its job is moved to completed (its return value).
    const byJobDelivery = deliveryJobId(`${byJob.eventId}.${endpoint.id}`);
    await until(async () => (await queue.getJobState(byJobDelivery)) === 'completed', 'the job completed');
    const job = await queue.getJob(byJobDelivery);
    expect(job?.data.fresh).toEqual({
      endpointId: endpoint.id,
      eventKey: byJob.key,
      type: 'data_import.import_process.post_import.completed-v1',
    });
    expect(job?.returnvalue).toEqual({ status: 'delivered', attempts: 1 });
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('500 twice, then 200: delivered on the third try with the same webhook-id', async () => {
    const r = await receiver((seen) => (seen < 2 ? 500 : 200));
    const endpoint = await hooks.add(ORG_A, r.url);
    const { eventId } = await emit(ORG_A);
    await until(async () => (await deliveryOf(eventId, endpoint.id))?.status === 'delivered', 'delivered');
    expect(r.received.map((x) => x.id)).toEqual([eventId, eventId, eventId]);
    expect(await deliveryOf(eventId, endpoint.id)).toMatchObject({ attempts: 3, lastHttpStatus: 200 });
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('never 2xx: failed after the configured retries, then replayed successfully with the same webhook-id', async () => {
    let healthy = false;
    const r = await receiver(() => (healthy ? 204 : 503));
    const endpoint = await hooks.add(ORG_A, r.url);
    const { eventId } = await emit(ORG_A);
    const id = `${eventId}.${endpoint.id}`;
    await until(async () => (await deliveryOf(eventId, endpoint.id))?.status === 'failed', 'failed');
    // One attempt, then one per configured delay (three).
    expect(r.received.filter((x) => x.id === eventId)).toHaveLength(4);
    const failed = await hooks.deliveries(ORG_A, { failed: true });
    expect(failed).toContainEqual({
      id,
      event_id: eventId,
      type: 'data_import.import_process.post_import.completed-v1',
      endpoint_id: endpoint.id,
      status: 'failed',
      attempts: 4,
      last_http_status: 503,
      next_attempt_at: null,
    });
    // Failed: no attempt due, so nothing for the sweep's look for lost jobs.
    await until(async () => (await t.app.db.models.WebhookDue.exists({ _id: id })) === null, 'no due entry');
    healthy = true;
    // Scoped by organisation: another organisation cannot replay it.
    await expect(hooks.replay(ORG_B, id)).rejects.toThrow(`delivery ${id} does not exist`);
    expect(await hooks.replay(ORG_A, id)).toEqual({ id, status: 'pending', replays: 1 });
    await until(async () => (await deliveryOf(eventId, endpoint.id))?.status === 'delivered', 'replayed');
    expect(r.received.at(-1)!.id).toBe(eventId);
    expect(await deliveryOf(eventId, endpoint.id)).toMatchObject({ attempts: 1, lastHttpStatus: 204 });
    await until(async () => (await t.app.db.models.WebhookDue.exists({ _id: id })) === null, 'no due entry');
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(
      /webhook_deliveries_total\{type="data_import.import_process.post_import.completed-v1",outcome="failed"\} [1-9]/,
    );
    expect(metrics.body).toMatch(/webhook_deliveries_total\{[^}]*outcome="retried"\} [1-9]/);
    expect(metrics.body).toMatch(/webhook_oldest_undelivered_event_age_seconds \d/);
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('a slow endpoint does not delay another: the fast one gets everything while the slow one still waits', async () => {
    const slow = await receiver(() => 'hang');
    const fast = await receiver();
    const slowEndpoint = await hooks.add(ORG_B, slow.url);
    const fastEndpoint = await hooks.add(ORG_B, fast.url);
    const events = [];
    for (let i = 0; i < 12; i++) events.push(await emit(ORG_B));
    await until(async () => fast.ids().size === events.length, 'every event at the fast endpoint');
    // The slow endpoint times out one delivery after another, two at a time: far from done. Its deliveries are
    // written pending as their first attempts end (or find no place), to be retried.
    expect(slow.received.length).toBeLessThan(events.length * 4);
    await until(
      async () =>
        (await t.app.db.models.WebhookDelivery.countDocuments({
          endpointId: slowEndpoint.id,
          status: 'pending',
        })) > 0,
      'the slow endpoint’s deliveries pending',
    );
    await hooks.remove(ORG_B, slowEndpoint.id);
    await hooks.remove(ORG_B, fastEndpoint.id);
  });
});

describe('who receives what', () => {
  it("an organisation's endpoints never receive another organisation's events; type filters apply", async () => {
    const a = await receiver();
    const b = await receiver();
    const onlyErrors = await receiver();
    const endpointA = await hooks.add(ORG_A, a.url);
    const endpointB = await hooks.add(ORG_B, b.url);
    const endpointErrors = await hooks.add(ORG_A, onlyErrors.url, [
      'data_import.import_process.post_import.error-v1',
    ]);
    const completed = await emit(ORG_A);
    const failed = await emit(ORG_A, { type: 'error' });
    const forB = await emit(ORG_B);
    await until(
      async () => a.ids().size === 2 && b.ids().size === 1 && onlyErrors.ids().size === 1,
      'deliveries',
    );
    expect(a.ids()).toEqual(new Set([completed.eventId, failed.eventId]));
    expect(b.ids()).toEqual(new Set([forB.eventId]));
    expect(onlyErrors.ids()).toEqual(new Set([failed.eventId]));
    const listed = await hooks.list(ORG_A);
    expect(listed.map((e) => e.id)).toEqual(expect.arrayContaining([endpointA.id, endpointErrors.id]));
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    expect((await hooks.deliveries(ORG_B)).every((d) => d.endpoint_id !== endpointA.id)).toBe(true);
    // Scoped by organisation: B cannot remove A's endpoint.
    await expect(hooks.remove(ORG_B, endpointA.id)).rejects.toThrow(`webhook ${endpointA.id} does not exist`);
    await hooks.remove(ORG_A, endpointA.id);
    await hooks.remove(ORG_B, endpointB.id);
    await hooks.remove(ORG_A, endpointErrors.id);
    expect(await hooks.list(ORG_A)).toEqual([]);
  });

  it('running workers see subscriptions as they change; an event nobody subscribes to is written dispatched', async () => {
    // Written dispatched, or its outbox entry gone since.
    const dispatched = async (eventId: string) => {
      const event = await t.app.db.models.ImportEvent.findOne({ eventId }).lean();
      return !!event && !(await t.app.storage.webhooks.outbox.undispatched(event._id));
    };
    const deliveriesOf = (eventId: string) => t.app.db.models.WebhookDelivery.countDocuments({ eventId });
    expect(await hooks.list(ORG_B)).toEqual([]);
    // Not relayed: its writer read the endpoints before the insert and wrote it dispatched (no later update).
    const unheard = await emit(ORG_B, { relay: false });
    expect(unheard.recorded.dispatched).toBe(true);
    expect(await dispatched(unheard.eventId)).toBe(true);
    await relayEvents(t.app.queues.queue('webhooks'), [unheard.recorded], 'test', {
      store: t.app.storage.webhooks,
    });
    expect(await t.app.queues.queue('webhooks').getJobState(jobId('dispatch', unheard.eventId))).toBe(
      'unknown',
    );
    expect(await deliveriesOf(unheard.eventId)).toBe(0);

    // A writer that could not read the endpoints writes the event undispatched; the relay decides, by the
    // same read, and marks it dispatched without a job.
    const orgB = await t.app.db.models.Organisation.findOne({ name: ORG_B }).lean();
    const blind = new ProcessEventLog(
      t.app.db.models.ImportEvent,
      null,
      () => Promise.reject(new Error('endpoints unreadable')),
      t.app.storage.webhooks.outbox,
    );
    const undecided = await blind.recordPostImport(
      {
        key: processKey('HOOKS_B', 'EXT-BLIND'),
        organisationId: orgB!._id,
        importSupplier: 'HOOKS_B',
        externalAccountNumber: 'EXT-BLIND',
        krakenAccountNumber: 'A-0000000A',
      },
      {
        type: 'data_import.import_process.post_import.completed-v1',
        resource: 'notes',
        ref: 'blind',
        count: 1,
      },
      new Date(),
    );
    expect(await dispatched(undecided.eventId)).toBe(false);
    await relayEvents(t.app.queues.queue('webhooks'), [undecided], 'test', { store: t.app.storage.webhooks });
    expect(await dispatched(undecided.eventId)).toBe(true);
    expect(await t.app.queues.queue('webhooks').getJobState(jobId('dispatch', undecided.eventId))).toBe(
      'unknown',
    );

    // Added after the workers read "no endpoints": the next event reaches it.
    const first = await receiver();
    const firstEndpoint = await hooks.add(ORG_B, first.url);
    const toFirst = await emit(ORG_B);
    await until(async () => first.ids().has(toFirst.eventId), 'the delivery to the added endpoint');

    const second = await receiver();
    const secondEndpoint = await hooks.add(ORG_B, second.url);
    const toBoth = await emit(ORG_B);
    await until(
      async () => first.ids().has(toBoth.eventId) && second.ids().has(toBoth.eventId),
      'the delivery to both endpoints',
    );

    // Removed: the next event goes to the other endpoint only.
    await hooks.remove(ORG_B, firstEndpoint.id);
    const afterRemoval = await emit(ORG_B);
    await until(async () => second.ids().has(afterRemoval.eventId), 'the delivery to the remaining endpoint');
    await until(() => dispatched(afterRemoval.eventId), 'the event marked dispatched');
    expect(await deliveryOf(afterRemoval.eventId, firstEndpoint.id)).toBeNull();
    expect(first.ids().has(afterRemoval.eventId)).toBe(false);
    expect(unheard.eventId).not.toBe(toFirst.eventId);
    expect(first.ids().has(unheard.eventId) || second.ids().has(unheard.eventId)).toBe(false);
    await hooks.remove(ORG_B, secondEndpoint.id);
  });

  it('an endpoint added after an event was recorded never gets it, however late the event is dispatched', async () => {
    const before = await receiver();
    const beforeEndpoint = await hooks.add(ORG_A, before.url);
    // Recorded, not relayed: only the outbox sweep dispatches it, after the second endpoint exists.
    const { eventId, occurredAt } = await emit(ORG_A, { relay: false });
    // Added strictly later than the event (not within its millisecond).
    await until(async () => Date.now() > occurredAt.getTime(), 'the clock to pass the event');
    const after = await receiver();
    const afterEndpoint = await hooks.add(ORG_A, after.url);
    await until(async () => before.ids().has(eventId), 'the swept event at the endpoint that predates it');
    expect(await deliveryOf(eventId, afterEndpoint.id)).toBeNull();
    expect(after.ids().has(eventId)).toBe(false);
    await hooks.remove(ORG_A, beforeEndpoint.id);
    await hooks.remove(ORG_A, afterEndpoint.id);
  });

  it('the outbox sweep delivers an event whose dispatch was never queued', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    const { eventId } = await emit(ORG_A, { relay: false });
    await until(async () => r.ids().has(eventId), 'the swept event');
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('events recorded undispatched are on outbox pages, which go once each of them is dispatched', async () => {
    const { WebhookOutbox } = t.app.db.models;
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    const events = await Promise.all(Array.from({ length: 6 }, () => emit(ORG_A, { relay: false })));
    const keys = events.map((e) => e.key);
    // Each on a page, none with an entry of its own. How many share a page depends on how the six writers'
    // reads before it interleave (test/storage/webhook-outbox.test.ts shows the sharing itself).
    const pages = await WebhookOutbox.find({ keys: { $in: keys } }).lean();
    expect(pages.length).toBeGreaterThan(0);
    expect(new Set(pages.flatMap((p) => p.keys!))).toEqual(new Set(keys));
    expect(await WebhookOutbox.countDocuments({ _id: { $in: keys } })).toBe(0);
    // Relayed (as their writer does): delivered from this process, and the pages deleted with the last of them.
    await relayEvents(
      t.app.queues.queue('webhooks'),
      events.map((e) => e.recorded),
      'test',
      {
        store: t.app.storage.webhooks,
        dispatch: t.app.webhooks,
      },
    );
    await until(async () => events.every((e) => r.ids().has(e.eventId)), 'every event delivered');
    await until(
      async () => (await WebhookOutbox.countDocuments({ keys: { $in: keys } })) === 0,
      'the pages deleted',
    );
    expect(await WebhookOutbox.countDocuments({ _id: { $in: keys } })).toBe(0);
    for (const e of events) expect(r.received.filter((x) => x.id === e.eventId)).toHaveLength(1);
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('a page its process never emptied (the process died) is expanded by the sweep: its events delivered, none twice', async () => {
    const { WebhookOutbox } = t.app.db.models;
    const store = t.app.storage.webhooks;
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    // One event delivered already, one never dispatched: a dead writer's page holds both.
    const done = await emit(ORG_A);
    await until(async () => !(await store.outbox.undispatched(done.key)), 'the first event dispatched');
    const left = await emit(ORG_A, { relay: false });
    await dropCover(left.key);
    const page = {
      _id: `page:dead-writer-${counter}`,
      keys: [done.key, left.key],
      occurredAt: new Date(Date.now() - 60_000),
    };
    await WebhookOutbox.insertMany([page]);
    await until(async () => r.ids().has(left.eventId), 'the undispatched event delivered');
    await until(async () => !(await WebhookOutbox.exists({ _id: page._id })), 'the page gone');
    for (const key of page.keys)
      await until(async () => !(await store.outbox.undispatched(key)), 'dispatched');
    await until(
      async () => (await deliveryOf(left.eventId, endpoint.id))?.status === 'delivered',
      'the delivery settled',
    );
    // Dispatched again, the delivered event was not sent again.
    expect(r.received.filter((x) => x.id === done.eventId)).toHaveLength(1);
    expect(r.received.filter((x) => x.id === left.eventId)).toHaveLength(1);
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('two writers of one history position in a process: the loser leaves its page, the winner’s event stays on one until dispatched', async () => {
    const { WebhookOutbox, ImportEvent } = t.app.db.models;
    const store = t.app.storage.webhooks;
    const orgDoc = await t.app.db.models.Organisation.findOne({ name: ORG_A }).lean();
    const external = `RACE-${++counter}`;
    const identity = {
      key: processKey('HOOKS_A', external),
      organisationId: orgDoc!._id,
      importSupplier: 'HOOKS_A',
      externalAccountNumber: external,
    };
    // Two logs of one process (each with its own cache of heads), both told someone is subscribed.
    const subscribed = () => Promise.resolve(true);
    const [a, b] = [0, 1].map(
      () => new ProcessEventLog(ImportEvent, null, subscribed, t.app.storage.webhooks.outbox),
    );
    const processed = () => ({
      event: { kind: 'PROCESSED' as const, data: { kraken_account_number: 'A-0000000A' }, run: 'run-1' },
      result: null,
    });
    const first = await a!.append(identity, processed, new Date());
    const won = await b!.append(identity, processed, new Date());
    // `a` tries the position after its cached head, which `b` took: it loses, and writes at the next one.
    const lost = await a!.append(identity, processed, new Date());
    const keys = [first, won, lost].map((r) => r.recorded!._id);
    expect(new Set(keys).size).toBe(3);
    expect(lost.state.seq).toBe(won.state.seq + 1);
    // Every event written undispatched is on a page, the winner's too.
    for (const key of keys) expect(await store.outbox.undispatched(key)).toBe(true);
    expect(await WebhookOutbox.countDocuments({ _id: { $in: keys } })).toBe(0);
    // Dispatched, the pages go.
    for (const key of keys) await store.outbox.markDispatched(key);
    await until(
      async () => (await WebhookOutbox.countDocuments({ keys: { $in: keys } })) === 0,
      'the pages deleted',
    );
  });

  it('the outbox sweep reads its entries only: events from before them are indexed once per database, an entry without its event is forgotten', async () => {
    const { WebhookOutbox, WebhookDue, ImportEvent } = t.app.db.models;
    const store = t.app.storage.webhooks;
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    // An event an earlier version wrote undispatched: no outbox entry. The sweep, with its once-per-database
    // look at the events not done yet, gives it one and delivers it; then that look is done for good.
    const legacy = await emit(ORG_A, { relay: false });
    expect(await store.outbox.undispatched(legacy.key)).toBe(true);
    await dropCover(legacy.key);
    await WebhookOutbox.deleteOne({ _id: LEGACY_SCAN_ID });
    await until(
      async () => r.ids().has(legacy.eventId),
      'the event from before the outbox entries, delivered',
    );
    expect(await WebhookOutbox.exists({ _id: LEGACY_SCAN_ID })).toBeTruthy();
    expect(await store.outbox.undispatched(legacy.key)).toBe(false);
    await until(
      async () => (await deliveryOf(legacy.eventId, endpoint.id))?.status === 'delivered',
      'settled',
    );
    // Its delivery was written pending by the sweep's dispatch (with a due entry), and is due no more.
    await until(
      async () => !(await WebhookDue.exists({ _id: `${legacy.eventId}.${endpoint.id}` })),
      'the delivered delivery without a due entry',
    );
    // Dispatched again (its entry back, as the look above gives one to an event dispatched since): no second
    // delivery, no send, and nothing left counted as undelivered.
    await WebhookOutbox.insertMany([{ _id: legacy.key, occurredAt: new Date(Date.now() - 60_000) }]);
    await until(async () => !(await store.outbox.undispatched(legacy.key)), 'the event dispatched again');
    const undelivered = redisKeys(t.config.QUEUE_PREFIX).webhooks.undelivered;
    expect(await t.app.redis.zscore(undelivered, `${legacy.eventId}.${endpoint.id}`)).toBeNull();
    // Done once: an undispatched event without an entry is not looked for again.
    const later = await emit(ORG_A, { relay: false });
    await dropCover(later.key);
    expect(await store.outbox.indexLegacy(new Date())).toBe(0);
    expect(await store.outbox.undispatched(later.key)).toBe(false);
    expect((await ImportEvent.findById(later.key).lean())?.dispatched).toBe(false);

    // An entry whose event was never written (its writer died in between): kept while the insert may still be
    // on its way, forgotten by the sweep's dispatch an hour on.
    const young = { _id: processKey('HOOKS_A', 'NEVER-WRITTEN-1') + '@0', occurredAt: new Date() };
    const old = {
      _id: processKey('HOOKS_A', 'NEVER-WRITTEN-2') + '@0',
      occurredAt: new Date(Date.now() - 2 * 60 * 60_000),
    };
    await WebhookOutbox.insertMany([young, old]);
    await until(
      async () => !(await store.outbox.undispatched(old._id)),
      'the old entry without an event forgotten',
    );
    await store.outbox.forgetUnwritten(young._id, new Date(Date.now() - 60 * 60_000));
    expect(await store.outbox.undispatched(young._id)).toBe(true);
    await WebhookOutbox.deleteOne({ _id: young._id });
    expect(r.received.filter((x) => x.id === legacy.eventId)).toHaveLength(1);
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('the outbox sweep queues a pending delivery whose job is gone (lost in a Redis failover) again', async () => {
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    const { eventId, key, organisationId } = await emit(ORG_A, { relay: false });
    // Dispatched as the dispatch job does it, but the delivery's job never reaches the queue: what a failover
    // loses when the old master had not replicated it.
    const store = t.app.storage.webhooks;
    const live = (await store.endpoints.live(organisationId)).filter(
      (e) => e._id.toHexString() === endpoint.id,
    );
    const { WebhookDue, WebhookOutbox } = t.app.db.models;
    // A second one written by an earlier version: no due entry, which the sweep's once-per-database look at
    // the deliveries still pending gives it.
    const older = await emit(ORG_A, { relay: false });
    const [delivery, legacy] = await Promise.all(
      [key, older.key].map(async (k) => {
        const [made] = await store.deliveries.create((await store.outbox.event(k))!, live, new Date());
        await store.outbox.markDispatched(k);
        return made!;
      }),
    );
    expect(await WebhookDue.exists({ _id: delivery!.id })).toBeTruthy();
    await WebhookDue.deleteOne({ _id: legacy!.id });
    await WebhookOutbox.deleteOne({ _id: LEGACY_SCAN_ID });
    for (const d of [delivery!, legacy!])
      expect(await t.app.queues.queue('webhooks').getJobState(deliveryJobId(d.id))).toBe('unknown');
    await until(
      async () => r.ids().has(eventId) && r.ids().has(older.eventId),
      'the deliveries whose jobs were lost',
    );
    for (const d of [delivery!, legacy!]) {
      await until(
        async () => (await store.deliveries.find(d.id))?.status === 'delivered',
        'the delivery recorded delivered',
      );
      // Settled, then its due entry deleted: the entry goes right after the delivery's update.
      await until(async () => (await WebhookDue.exists({ _id: d.id })) === null, 'the due entry deleted');
    }
    expect(r.received.filter((x) => x.id === eventId)).toHaveLength(1);
    expect(r.received.filter((x) => x.id === older.eventId)).toHaveLength(1);

    // An entry behind its delivery (a crash between the two writes of a retry): moved to the delivery's next
    // attempt by the sweep, not read again at every round until then.
    const behind = await emit(ORG_A, { relay: false });
    const nextAttemptAt = new Date(Date.now() + 60 * 60_000);
    const [later] = await store.deliveries.create((await store.outbox.event(behind.key))!, live, new Date(), [
      { status: 'pending', attempts: 1, lastHttpStatus: 503, nextAttemptAt },
    ]);
    await store.outbox.markDispatched(behind.key);
    await WebhookDue.updateOne({ _id: later!.id }, { $set: { dueAt: new Date(Date.now() - 60_000) } });
    await until(
      async () => (await WebhookDue.findById(later!.id).lean())?.dueAt.getTime() === nextAttemptAt.getTime(),
      'the entry moved to the next attempt',
    );
    await t.app.db.models.WebhookDelivery.deleteOne({ _id: later!.id });
    await WebhookDue.deleteOne({ _id: later!.id });
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('the outbox sweep comes back when its scheduler is lost (the workers schedule it again)', async () => {
    const queue = t.app.queues.queue('webhooks');
    // Removed (again, should a sweep running at that moment have scheduled its next run).
    await until(async () => {
      await queue.removeJobScheduler('sweep-outbox');
      return !(await queue.getJobScheduler('sweep-outbox'));
    }, 'the sweep scheduler gone');
    const r = await receiver();
    const endpoint = await hooks.add(ORG_A, r.url);
    const { eventId } = await emit(ORG_A, { relay: false });
    await until(async () => r.ids().has(eventId), 'an event only the sweep can deliver');
    expect(await queue.getJobScheduler('sweep-outbox')).toBeTruthy();
    await hooks.remove(ORG_A, endpoint.id);
  });

  it('refuses unknown event types', async () => {
    await expect(hooks.add(ORG_A, 'http://127.0.0.1:9/x', ['no.such.type'])).rejects.toThrow(
      /unknown event type/,
    );
  });
});

describe('signing secrets at rest', () => {
  it('are stored encrypted, open with the configured key only, and a legacy clear secret still reads', async () => {
    const added = await hooks.add(ORG_A, 'http://127.0.0.1:9/secret-check');
    const stored = await t.app.db.models.WebhookEndpoint.findById(added.id).lean();
    expect(stored!.secret.startsWith('enc:v1:')).toBe(true);
    expect(stored!.secret).not.toContain(added.secret.slice('whsec_'.length, 20));
    expect(openSecret(stored!.secret, t.config)).toBe(added.secret);
    const otherKey = { ...t.config, WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
    expect(() => openSecret(stored!.secret, otherKey)).toThrow(/cannot be read with this WEBHOOK_SECRET_KEY/);
    expect(openSecret('whsec_legacy', t.config)).toBe('whsec_legacy');
    await hooks.remove(ORG_A, added.id);
  });
});

describe('the URL guard', () => {
  it('only public unicast addresses', () => {
    for (const ok of ['8.8.8.8', '1.1.1.1', '2001:4860:4860::8888'])
      expect(isPublicAddress(ok), ok).toBe(true);
    for (const bad of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      // IPv4-compatible (deprecated), NAT64, 6to4 and Teredo forms of private or any IPv4 addresses.
      '::127.0.0.1',
      '::10.0.0.1',
      '::8.8.8.8',
      '64:ff9b::7f00:1',
      '2002:7f00:1::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      'not-an-ip',
    ])
      expect(isPublicAddress(bad), bad).toBe(false);
  });

  it('refuses http://, loopback and private hosts unless WEBHOOK_ALLOW_PRIVATE', async () => {
    await expect(checkWebhookUrl('http://example.com/x', false)).rejects.toThrow(/https/);
    await expect(checkWebhookUrl('https://127.0.0.1/x', false)).rejects.toThrow(/non-public/);
    await expect(checkWebhookUrl('https://[::1]/x', false)).rejects.toThrow(/non-public/);
    await expect(checkWebhookUrl('https://[::127.0.0.1]/x', false)).rejects.toThrow(/non-public/);
    await expect(checkWebhookUrl('https://10.0.0.8/x', false)).rejects.toThrow(/non-public/);
    await expect(checkWebhookUrl('https://localhost/x', false)).rejects.toThrow(/non-public/);
    await expect(checkWebhookUrl('https://user:pw@8.8.8.8/x', false)).rejects.toThrow(/credentials/);
    expect((await checkWebhookUrl('https://8.8.8.8/x', false)).address).toBe('8.8.8.8');
    expect((await checkWebhookUrl('http://127.0.0.1:3000/x', true)).address).toBe('127.0.0.1');
    // A lookup that never answers ends within the bound, as a timeout (retried), not as an unsafe URL.
    const never = () => new Promise<never>(() => undefined);
    await expect(
      checkWebhookUrl('https://hangs.example/x', false, { lookupTimeoutMs: 200, resolve: never }),
    ).rejects.toThrow(new WebhookLookupTimeout('the host hangs.example did not resolve within 200 ms'));
    const strict = new WebhookOperations(t.app.storage, { ...t.config, WEBHOOK_ALLOW_PRIVATE: false });
    await expect(strict.add(ORG_A, 'https://127.0.0.1/hooks')).rejects.toThrow(/refused/);
  });
});
