import { DelayedError, Queue, UnrecoverableError, Worker, type Job, type Processor } from 'bullmq';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../storage/database.js';
import { createStorage, type Storage } from '../storage/index.js';
import { publishResult, publishUnavailable } from '../infra/job-results.js';
import { isDatabaseUnavailable } from '../infra/mongo.js';
import {
  logConnectionErrors,
  producerConnection,
  workerConnection,
  type RedisClient,
} from '../infra/redis.js';
import { watchProgress } from '../use-cases/progress/rebuild.js';
import { createWebhookProcess } from '../use-cases/webhooks/webhook-process.js';
import { buildVendors } from '../infra/vendors/index.js';
import { redisKeys } from '../infra/redis-keys.js';
import { queueTelemetry } from '../infra/telemetry/index.js';
import { withTimeout } from '../infra/timeout.js';
import { jobCatalog, queueNames, retention, type JobName, type QueueName } from '../jobs/catalog.js';
import { startFairDispatch } from './fair-slots.js';
import { startPlanChecks } from './plan-gate.js';
import type { WorkerContext } from './context.js';
import { onStalled, processors } from './processors.js';

/** BullMQ's reason for a job moved to failed by the stalled check (`maxStalledCount` exceeded). */
const STALLED_FAILURE = /stalled more than allowable limit/i;

/** How long a job that could not reach the database waits before it runs again (plus up to 0.5 s jitter). */
const UNAVAILABLE_RETRY_MS = 1_000;

/** The outbox sweep's scheduler is upserted again this often at least (or every sweep interval if longer). */
const SCHEDULER_CHECK_MIN_MS = 5_000;

/**
 * How long a worker's close may take (its running jobs, then its own connections) before its blocking connection
 * is cut: shutdown stays bounded, within a pod's usual 30 s grace, when a Redis node the worker used is gone.
 */
const WORKER_CLOSE_MS = 20_000;

export type RunningWorkers = { workers: Worker[]; close: () => Promise<void> };

/**
 * Closes a worker, waiting at most `ms`. A BullMQ worker's close quits its blocking connection, and a Redis
 * Cluster client caught between a node's death and its reconnect (status `close`, its reconnect switched off by
 * the close) never answers the quit, nor ends on BullMQ's own disconnect: seen in one close in about ten after a
 * master was SIGKILLed. The blocking client is then cut without waiting for its end (the worker's other
 * connection is ours, cut by the caller); a job the worker was still running is taken up again by another worker
 * once its lock lapses (every job is idempotent).
 */
async function closeWithin(worker: Worker, ms: number, log: Pick<Logger, 'warn'>): Promise<void> {
  try {
    await withTimeout(worker.close(), ms);
  } catch (err) {
    log.warn(
      { queue: worker.name, err: (err as Error).message },
      'worker not closed in time: its blocking connection is cut',
    );
    const blocking = worker.backend.blockingClient;
    const client = blocking && (await withTimeout(blocking, 1_000).catch(() => undefined));
    client?.disconnect();
  }
}

/** What every queue's worker of this process shares: one producer connection, one storage object, the queues. */
type Shared = {
  config: Config;
  log: Logger;
  keys: ReturnType<typeof redisKeys>;
  producer: RedisClient;
  storage: Storage;
  queues: Map<QueueName, Queue>;
  ctx: Omit<WorkerContext, 'jobRedis'>;
};

/** Starts one BullMQ worker per queue, dispatching each job to its processor by job name. */
export function startWorkers(
  deps: { config: Config; db: Database; log: Logger; clock?: () => Date },
  only: readonly QueueName[] = queueNames,
): RunningWorkers {
  const shared = openShared(deps);
  const { config, log, producer, storage, queues } = shared;
  const stopProgressWatch = watchProgress({ storage, log }, config.PROGRESS_CHECK_INTERVAL_MS);
  const connections: RedisClient[] = [];
  const workers = only.map((queueName) => {
    const connection = workerConnection(config);
    connections.push(connection);
    return startWorker(queueName, connection, shared);
  });
  const stopSweep = only.includes('webhooks') ? scheduleOutboxSweep(shared) : () => undefined;
  const stopFair = only.includes('account-creation') ? startFairDispatch(shared.ctx) : () => undefined;
  const stopPlans = only.includes('account-creation') ? startPlanChecks(shared.ctx) : () => undefined;
  return {
    workers,
    async close() {
      stopSweep();
      stopFair();
      stopPlans();
      await stopProgressWatch();
      await Promise.all(workers.map((w) => closeWithin(w, WORKER_CLOSE_MS, log)));
      // First attempts made by this process's jobs (each at most a second's wait for a place, then
      // WEBHOOK_TIMEOUT_MS).
      await shared.ctx.webhooks.drain();
      await Promise.all([...queues.values()].map((q) => q.close()));
      // Given to BullMQ as instances, so they are ours to close.
      for (const connection of connections) connection.disconnect();
      producer.disconnect();
    },
  };
}

/** The process's producer connection, its storage object (built here, once) and a producer per queue. */
function openShared(deps: { config: Config; db: Database; log: Logger; clock?: () => Date }): Shared {
  const { config, db, log } = deps;
  const keys = redisKeys(config.QUEUE_PREFIX);
  const producer = producerConnection(config);
  logConnectionErrors(producer, log, 'worker-producer');
  const storage = createStorage(db, { config, redis: producer, log });
  const queues = new Map<QueueName, Queue>(
    queueNames.map((name) => [
      name,
      new Queue(name, { connection: producer, prefix: keys.queuePrefix(name), ...queueTelemetry() }),
    ]),
  );
  for (const q of queues.values()) q.on('error', (err) => log.warn({ err: err.message }, 'queue error'));
  const clock = deps.clock ?? (() => new Date());
  const ctx: Omit<WorkerContext, 'jobRedis'> = {
    config,
    storage,
    log,
    queue: (name) => queues.get(name)!,
    redis: producer,
    clock,
    webhooks: createWebhookProcess({ config, log, redis: producer, clock }),
    vendors: buildVendors(config, clock),
  };
  return { config, log, keys, producer, storage, queues, ctx };
}

/** One queue's worker: runs each job through `dispatcher`, and ends the history of a job failed by stalling. */
function startWorker(queueName: QueueName, connection: RedisClient, shared: Shared): Worker {
  const { config, log, keys, ctx } = shared;
  const worker = new Worker(queueName, dispatcher(queueName, connection, shared), {
    // Also the job's completion connection (`jobRedis`): BullMQ uses the instance it is given for commands.
    connection,
    prefix: keys.queuePrefix(queueName),
    concurrency: config.WORKER_CONCURRENCY,
    lockDuration: config.WORKER_LOCK_DURATION_MS,
    stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
    maxStalledCount: config.WORKER_MAX_STALLED_COUNT,
    ...queueTelemetry(),
  });
  worker.on('error', (err) => log.warn({ err: err.message, queue: queueName }, 'worker error'));
  worker.on('failed', (job, err) => {
    log.warn(
      { queue: queueName, job_id: job?.id, attempts: job?.attemptsMade, err: err.message },
      'job failed',
    );
    // Failed by stalling (its workers died under it): no processor's catch ran, so its history is ended here.
    if (job && STALLED_FAILURE.test(err.message) && Object.hasOwn(onStalled, job.name))
      onStalled[job.name as keyof typeof onStalled]!({ ...ctx, jobRedis: connection }, job).catch(
        (e: Error) => log.warn({ job_id: job.id, err: e.message }, 'could not record the stalled job'),
      );
  });
  return worker;
}

/** A job's data, checked against the catalogue: a job this code cannot run never becomes runnable by retrying. */
function checkedJob(job: Job, queueName: QueueName): { name: JobName; data: { requestId?: string } } {
  const spec = Object.hasOwn(jobCatalog, job.name) ? jobCatalog[job.name as JobName] : undefined;
  if (!spec || spec.queue !== queueName)
    throw new UnrecoverableError(`unknown job ${job.name} on ${queueName}`);
  const parsed = spec.data.safeParse(job.data);
  if (!parsed.success)
    throw new UnrecoverableError(
      `invalid data for ${job.name}: ${parsed.error.issues.map((i) => i.path.join('.') || 'data').join(', ')}`,
    );
  return { name: job.name as JobName, data: parsed.data };
}

/**
 * The queue's processor: checks the job, runs its processor and publishes the result early for a waiting API.
 * An outage is no fault of the job: it waits and runs again without using up an attempt, for as long as the
 * outage lasts (every processor is idempotent), and a waiting API hears of it at once (503). Once a job met the
 * outage, jobs first check that the database is back (one ping) rather than each taking its slot and failing on
 * its first read.
 */
function dispatcher(queueName: QueueName, connection: RedisClient, shared: Shared): Processor {
  const { config, log, keys, storage, ctx } = shared;
  let databaseDown = false;
  return async (job: Job, token?: string) => {
    const { name, data } = checkedJob(job, queueName);
    const jobLog = log.child({ queue: queueName, job_id: job.id, job: job.name, request_id: data.requestId });
    const processor = processors[name] as (data: unknown, job: Job, ctx: WorkerContext) => Promise<unknown>;
    const putBack = async (err: unknown): Promise<never> => {
      publishUnavailable(connection, keys, queueName, job.id!);
      jobLog.warn({ err: (err as Error).message }, 'database unavailable; job put back to retry');
      await job.moveToDelayed(Date.now() + UNAVAILABLE_RETRY_MS + Math.floor(Math.random() * 500), token);
      throw new DelayedError();
    };
    if (databaseDown) {
      await storage.ping(config.MONGO_SERVER_SELECTION_TIMEOUT_MS).catch(putBack);
      databaseDown = false;
    }
    let result: unknown;
    try {
      result = await processor(data, job, { ...ctx, log: jobLog, jobRedis: connection });
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      databaseDown = true;
      return putBack(err);
    }
    // Before BullMQ completes the job on this same connection: a waiting API can answer a round trip sooner.
    publishResult(connection, keys, queueName, job.id!, result);
    return result;
  };
}

/**
 * The outbox sweep: one scheduler for the whole fleet (upserting it is idempotent), run by whichever worker.
 * Upserted again every round: a Redis Cluster failover may lose the scheduler or its next job (what the old
 * master had not replicated), and upserting puts back whatever is missing without moving the next run.
 * Returns what stops it.
 */
function scheduleOutboxSweep({ config, log, queues }: Shared): () => void {
  const schedule = () =>
    queues
      .get('webhooks')!
      .upsertJobScheduler(
        'sweep-outbox',
        { every: config.OUTBOX_SWEEP_INTERVAL_MS },
        { name: 'sweep-outbox', data: { requestId: 'outbox-sweep' }, opts: { ...retention } },
      )
      .catch((err: Error) => log.warn({ err: err.message }, 'could not schedule the outbox sweep'));
  void schedule();
  const timer = setInterval(
    () => void schedule(),
    Math.max(config.OUTBOX_SWEEP_INTERVAL_MS, SCHEDULER_CHECK_MIN_MS),
  );
  timer.unref();
  return () => clearInterval(timer);
}
