import { DelayedError, Worker, type Job } from 'bullmq';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { producerConnection, workerConnection, type RedisClient } from '../../src/infra/redis.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { deliveryJobId, deliveryJobOptions, type JobData } from '../../src/jobs/catalog.js';
import type { WorkerContext } from '../../src/workers/context.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import type { MadeAttempt } from '../../src/storage/webhooks/webhook-deliveries.js';
import { WebhookFleetState } from '../../src/use-cases/webhooks/fleet-state.js';
import { createWebhookProcess } from '../../src/use-cases/webhooks/webhook-process.js';
import { deliverWebhookJob } from '../../src/workers/deliver-webhook.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import { until } from '../creation/support.js';
import { receiverPool } from './receiver.js';

// A delivery job that stalls: BullMQ takes a job whose lock lapsed for one whose worker died and runs it again,
// while its first run may still be going on. Jobs are fetched here by hand (no worker runs the webhook queue):
// the first fetch's lock is never renewed, so BullMQ's stalled check hands the job to a second fetch, and the
// processor runs for each, against a real receiver.
let t: TestApp;
let hooks: WebhookOperations;
/** A worker process's context; `elsewhere`, another process's (its own connection, its own endpoint places). */
let ctx: WorkerContext;
let elsewhere: WorkerContext;
let otherProcess: RedisClient;
/** Fetches with a short lock: what it fetches stalls. Its stalled check runs throughout. */
let stalling: Worker;
/** Fetches with a long lock: what it fetches stays its own. */
let steady: Worker;
const receivers = receiverPool();
const ORG = 'Stall Org';
const SUPPLIER = 'STALL';

beforeAll(async () => {
  t = await startTestApp({
    env: {
      TEST_LABEL: 'webhook_stall',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_ACTIVATION_DELAY_MS: '0',
      // Retries far off: none is made by itself during a test.
      WEBHOOK_RETRY_DELAYS_MS: '60000,60000',
      WEBHOOK_TIMEOUT_MS: '20000',
      WEBHOOK_ENDPOINT_CONCURRENCY: '1',
    },
  });
  await createTenant(t, ORG, SUPPLIER);
  hooks = new WebhookOperations(t.app.storage, t.config);
  const prefix = redisKeys(t.config.QUEUE_PREFIX).queuePrefix('webhooks');
  const puller = (lockDuration: number) =>
    new Worker('webhooks', null, {
      connection: workerConnection(t.config),
      prefix,
      autorun: false,
      lockDuration,
      stalledInterval: 200,
      maxStalledCount: 100,
    });
  stalling = puller(300);
  steady = puller(120_000);
  await stalling.startStalledCheckTimer();
  const log = pino({ level: 'silent' });
  const clock = () => new Date();
  ctx = {
    config: t.config,
    storage: t.app.storage,
    log,
    queue: (name) => t.app.queues.queue(name),
    redis: t.app.redis,
    jobRedis: t.app.redis,
    clock,
    webhooks: t.app.webhooks,
  } as WorkerContext;
  otherProcess = producerConnection(t.config);
  elsewhere = {
    ...ctx,
    redis: otherProcess,
    jobRedis: otherProcess,
    webhooks: createWebhookProcess({ config: t.config, log, redis: otherProcess, clock }),
  };
});
afterEach(async () => {
  for (const endpoint of await hooks.list(ORG)) await hooks.remove(ORG, endpoint.id);
});
afterAll(async () => {
  await stalling?.close(true);
  await steady?.close(true);
  otherProcess?.disconnect();
  await receivers.closeAll();
  await t?.close();
});

let counter = 0;
/**
 * A delivery to a new endpoint at `url`, written as a dispatch writes it (`made`: as a direct first attempt
 * left it), and its job queued (not run). `fresh`: the job says what the delivery holds, as a dispatch's does.
 */
async function deliveryTo(url: string, options: { made?: MadeAttempt; fresh?: boolean } = {}) {
  const endpoint = await hooks.add(ORG, url);
  const org = await t.app.db.models.Organisation.findOne({ name: ORG }).lean();
  const external = `STALL-${++counter}`;
  const recorded = await t.app.storage.events.recordPostImport(
    {
      key: processKey(SUPPLIER, external),
      organisationId: org!._id,
      importSupplier: SUPPLIER,
      externalAccountNumber: external,
      krakenAccountNumber: 'A-0000000C',
    },
    {
      type: 'data_import.import_process.post_import.completed-v1',
      resource: 'notes',
      ref: external,
      count: 1,
    },
    new Date(),
  );
  const store = t.app.storage.webhooks;
  const event = (await store.outbox.event(recorded._id))!;
  const live = (await store.endpoints.find(endpoint.id))!;
  const [delivery] = await store.deliveries.create(event, [live], new Date(), [options.made ?? null]);
  await store.outbox.markDispatched(event._id);
  const data: JobData<'deliver-webhook'> = { deliveryId: delivery!.id, requestId: 'stall-test' };
  if (options.fresh) data.fresh = { endpointId: endpoint.id, eventKey: event._id, type: event.type! };
  await t.app.queues.queue('webhooks').add('deliver-webhook', data, deliveryJobOptions(delivery!.id));
  return { id: delivery!.id, endpoint, eventId: event.eventId, body: event.body!, data };
}

/** The next job on the queue, fetched by `puller` under `token`. */
const fetchJob = (puller: Worker, token: string) =>
  until(() => puller.getNextJob(token, { block: false }) as Promise<Job | undefined>, `a job for ${token}`);

/** The same job twice: fetched, stalled (its lock lapses), fetched again. The first run's job comes first. */
async function stalledJob(): Promise<[Job, Job]> {
  const first = await fetchJob(stalling, 'first-run');
  const second = await fetchJob(steady, 'second-run');
  expect(second.id).toBe(first.id);
  return [first, second];
}

/**
 * Runs the processor as a worker does, then moves the job on with its token (completed; a delayed job was moved
 * by the processor): refused for a run whose job stalled (its token is not the job's any more), as in BullMQ.
 */
async function run(job: Job, data: JobData<'deliver-webhook'>, on = ctx) {
  const result = await deliverWebhookJob(data, job, on);
  await job.moveToCompleted(result, job.token!, false).catch(() => undefined);
  return result;
}

/** A status the receiver gives once `release` is called (the request held open until then). */
function held() {
  let release!: (status: number) => void;
  const answer = new Promise<number>((resolve) => (release = resolve));
  return { answer, release };
}

const recordOf = (id: string) => t.app.db.models.WebhookDelivery.findById(id).lean();
const listed = async (id: string) => (await hooks.deliveries(ORG)).find((d) => d.id === id);

describe('a delivery job run twice (stalled)', () => {
  it('run again after its first run delivered: nothing is sent again, and it stays delivered', async () => {
    const r = await receivers.start((seen) => (seen === 0 ? 200 : 500));
    const fresh = await deliveryTo(r.url, { fresh: true });
    const first = await fetchJob(stalling, 'first-run');
    // Its processor returns, but the job is never completed (its worker died, or its lock had lapsed): the
    // stalled check gives it out again.
    expect(await deliverWebhookJob(fresh.data, first, elsewhere)).toEqual({
      status: 'delivered',
      attempts: 1,
    });
    const second = await fetchJob(steady, 'second-run');
    expect(second.id).toBe(first.id);
    // The second run's job data still says the delivery is fresh.
    expect(second.data).toEqual(fresh.data);
    expect(await run(second, fresh.data)).toEqual({ status: 'delivered' });
    expect(r.received.map((x) => x.id)).toEqual([fresh.eventId]);
    expect(r.received[0]!.body).toBe(fresh.body);
    expect(await recordOf(fresh.id)).toMatchObject({ status: 'delivered', attempts: 1, lastHttpStatus: 200 });
    expect(await listed(fresh.id)).toMatchObject({ status: 'delivered', attempts: 1, last_http_status: 200 });
  });

  it('two runs at once: a failure answered after the other run delivered does not make it pending again', async () => {
    const late = held();
    const r = await receivers.start((seen) => (seen === 0 ? late.answer : 200));
    // A retry's job: its first attempt (made directly) was refused.
    const made = { status: 'pending', attempts: 1, lastHttpStatus: 503, nextAttemptAt: new Date() } as const;
    const { id, eventId, data } = await deliveryTo(r.url, { made });
    const [first, second] = await stalledJob();
    const firstRun = run(first, data, elsewhere).catch((err: Error) => err);
    await until(async () => r.received.length === 1, 'the first run’s request at the receiver');
    // The second run sends while the first run's request is still unanswered, and is delivered.
    expect(await run(second, data)).toEqual({ status: 'delivered', attempts: 2 });
    expect(await recordOf(id)).toMatchObject({ status: 'delivered', attempts: 2, lastHttpStatus: 200 });
    // Then the first run's request is refused: its outcome comes too late to count.
    late.release(500);
    const outcome = await firstRun;
    expect(await recordOf(id)).toMatchObject({ status: 'delivered', attempts: 2, lastHttpStatus: 200 });
    expect(outcome).toEqual({ status: 'delivered', attempts: 2 });
    expect(r.received.map((x) => x.id)).toEqual([eventId, eventId]);
    expect(await listed(id)).toMatchObject({ status: 'delivered', attempts: 2, next_attempt_at: null });
    expect(await t.app.db.models.WebhookDue.exists({ _id: id })).toBeNull();
  });

  it('a run left behind by a replay neither writes over the replay nor stops its delivery', async () => {
    const late = held();
    const r = await receivers.start((seen) => (seen === 0 ? late.answer : seen === 1 ? 503 : 200));
    // Its last attempt to come (two retries configured, both made).
    const made = { status: 'pending', attempts: 2, lastHttpStatus: 503, nextAttemptAt: new Date() } as const;
    const { id, eventId, data } = await deliveryTo(r.url, { made });
    const [first, second] = await stalledJob();
    const firstRun = run(first, data, elsewhere).catch((err: Error) => err);
    await until(async () => r.received.length === 1, 'the first run’s request at the receiver');
    expect(await run(second, data)).toEqual({ status: 'failed', attempts: 3 });
    // The operator replays the failed delivery while the first run still waits for its answer.
    expect(await hooks.replay(ORG, id)).toEqual({ id, status: 'pending', replays: 1 });
    late.release(503);
    // The first run's outcome (the same attempt as the second run's) is dropped: the replay stands.
    const outcome = await firstRun;
    expect(await listed(id)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(outcome).toEqual({ status: 'pending', attempts: 0 });
    expect(await recordOf(id)).toMatchObject({ status: 'pending', attempts: 0, replays: 1 });
    const replay = await fetchJob(steady, 'replay-run');
    expect(replay.id).toBe(deliveryJobId(id, 1));
    expect(await run(replay, replay.data as JobData<'deliver-webhook'>)).toEqual({
      status: 'delivered',
      attempts: 1,
    });
    expect(r.received.map((x) => x.id)).toEqual([eventId, eventId, eventId]);
    expect(await recordOf(id)).toMatchObject({ status: 'delivered', attempts: 1, lastHttpStatus: 200 });
  });

  it('a run that waited for a place while its endpoint was removed sends nothing', async () => {
    const r = await receivers.start();
    const { id, endpoint, data } = await deliveryTo(r.url, { fresh: true });
    const fleet = new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX);
    // The endpoint's one place is another delivery's.
    expect(await fleet.takeSlot(endpoint.id, 'another-delivery', 1, 60_000)).toBe(true);
    const asked = vi.spyOn(WebhookFleetState.prototype, 'takeSlot');
    try {
      const job = await fetchJob(steady, 'run');
      const running = run(job, data).catch((err: Error) => err);
      // It asked for a place and waits for one: the endpoint is removed, then the place freed.
      await until(async () => asked.mock.calls.length > 0, 'the run waiting for a place');
      await hooks.remove(ORG, endpoint.id);
      await fleet.releaseSlot(endpoint.id, 'another-delivery');
      let outcome = await running;
      // Had the removal and the freed place taken longer than its wait (a loaded machine), it waited as a
      // delayed job: run it again.
      if (outcome instanceof DelayedError) outcome = await run(await fetchJob(steady, 'run-again'), data);
      expect(outcome).toEqual({ status: 'failed', attempts: 0 });
    } finally {
      asked.mockRestore();
    }
    expect(r.received).toHaveLength(0);
    expect(await recordOf(id)).toMatchObject({ status: 'failed', attempts: 0 });
  });
});
