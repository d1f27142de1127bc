import { Queue, QueueEvents, Worker } from 'bullmq';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { producerConnection, workerConnection } from '../../src/infra/redis.js';
import { JobResults, publishResult } from '../../src/infra/job-results.js';
import { waitForFinish } from '../../src/infra/wait-for-finish.js';
import { testConfig } from '../support/env.js';
import { until } from '../creation/support.js';
import { redisKeys } from '../../src/infra/redis-keys.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const config = testConfig({ TEST_LABEL: 'waitfinish' });
  const producer = producerConnection(config);
  producer.on('error', () => undefined);
  const queue = new Queue('w', {
    connection: producer,
    prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('w'),
  });
  const events = new QueueEvents('w', {
    connection: workerConnection(config),
    prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('w'),
  });
  await events.waitUntilReady();
  cleanups.push(async () => {
    await events.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    producer.disconnect();
  });
  const work = (processor: (data: { n: number }) => Promise<unknown>) => {
    const worker = new Worker('w', (job) => processor(job.data as { n: number }), {
      connection: workerConnection(config),
      prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('w'),
    });
    cleanups.push(() => worker.close());
    return worker;
  };
  return { config, queue, events, work };
}

describe('waitForFinish', () => {
  it("answers a job's result, also when the job finished before the wait began", async () => {
    const { queue, events, work } = await setup();
    work(async ({ n }) => ({ doubled: n * 2 }));
    const pending = new Set<() => void>();
    const live = await queue.add('x', { n: 2 }, { jobId: 'live' });
    expect(await waitForFinish(events, queue, live, 10_000, pending)).toEqual({
      result: { doubled: 4 },
      timedOut: false,
    });
    const early = await queue.add('x', { n: 5 }, { jobId: 'early' });
    await waitForFinish(events, queue, early, 10_000, pending);
    // Finished long before this second wait started listening.
    expect(await waitForFinish(events, queue, early, 10_000, pending)).toEqual({
      result: { doubled: 10 },
      timedOut: false,
    });
    expect(pending.size).toBe(0);
  });

  it('rejects with the failure reason, and answers timedOut when no worker finishes in time', async () => {
    const { queue, events, work } = await setup();
    const pending = new Set<() => void>();
    const waiting = await queue.add('x', { n: 1 }, { jobId: 'nobody' });
    expect(await waitForFinish(events, queue, waiting, 200, pending)).toEqual({
      result: undefined,
      timedOut: true,
    });
    work(async () => {
      throw new Error('vendor said no');
    });
    const failing = await queue.add('x', { n: 1 }, { jobId: 'fails' });
    await expect(waitForFinish(events, queue, failing, 10_000, pending)).rejects.toThrow('vendor said no');
    expect(pending.size).toBe(0);
  });

  it('rejects, rather than leaking an unhandled rejection, when Redis is unreachable as the wait begins', async () => {
    const { config, events } = await setup();
    // A queue on its own connection, closed after the job was added: the "finished already?" lookup fails.
    const connection = producerConnection(config);
    connection.on('error', () => undefined);
    const queue = new Queue('w', { connection, prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('w') });
    const job = await queue.add('x', { n: 1 }, { jobId: 'lost' });
    connection.disconnect();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    cleanups.push(() => void process.off('unhandledRejection', onUnhandled));
    const pending = new Set<() => void>();
    await expect(waitForFinish(events, queue, job, 10_000, pending)).rejects.toThrow();
    expect(pending.size).toBe(0);
    // Give a stray rejection a turn of the event loop to surface.
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  });

  it('ends every wait in progress when told to (the API closing)', async () => {
    const { queue, events } = await setup();
    const pending = new Set<() => void>();
    const job = await queue.add('x', { n: 1 }, { jobId: 'closing' });
    const waiting = waitForFinish(events, queue, job, 60_000, pending);
    expect(pending.size).toBe(1);
    for (const cancel of pending) cancel();
    await expect(waiting).rejects.toThrow('the queue is closing');
    expect(pending.size).toBe(0);
  });

  it('queues the job again when it vanishes from the queue while the wait goes on (lost in a failover)', async () => {
    const { queue, events, work } = await setup();
    const pending = new Set<() => void>();
    const job = await queue.add('x', { n: 4 }, { jobId: 'vanishing' });
    let requeued = 0;
    const add = async () => {
      requeued++;
      await queue.add('x', { n: 4 }, { jobId: 'vanishing' });
    };
    const waiting = waitForFinish(events, queue, job, 60_000, pending, undefined, { everyMs: 50, add });
    // Gone, as a job the old master had not replicated is gone after a failover.
    await job.remove();
    await until(async () => (await queue.getJobState('vanishing')) === 'waiting', 'the job queued again');
    expect(requeued).toBe(1);
    work(async ({ n }) => ({ doubled: n * 2 }));
    expect(await waiting).toEqual({ result: { doubled: 8 }, timedOut: false });
    expect(requeued).toBe(1);
  });

  it('answers from a result the worker published, before (here: without) the queue finishing the job', async () => {
    const { config, queue, events } = await setup();
    const results = new JobResults(config, redisKeys(config.QUEUE_PREFIX), pino({ level: 'silent' }));
    cleanups.push(() => results.close());
    await results.ready;
    const pending = new Set<() => void>();
    // No worker: the job stays waiting, so only the published result can end the wait.
    const job = await queue.add('x', { n: 3 }, { jobId: 'early-result' });
    const waiting = waitForFinish(events, queue, job, 10_000, pending, results);
    const publisher = producerConnection(config);
    cleanups.push(() => publisher.disconnect());
    await new Promise((resolve) => publisher.once('ready', resolve));
    publishResult(publisher, redisKeys(config.QUEUE_PREFIX), 'other-queue', 'early-result', { wrong: true });
    publishResult(publisher, redisKeys(config.QUEUE_PREFIX), 'w', 'early-result', { doubled: 6 });
    expect(await waiting).toEqual({ result: { doubled: 6 }, timedOut: false });
    expect(await queue.getJobState('early-result')).toBe('waiting');
    expect(results.listenerCount('w:early-result')).toBe(0);
  });
});
