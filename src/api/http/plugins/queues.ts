import fp from 'fastify-plugin';
import { Queue, QueueEvents, type Job } from 'bullmq';
import {
  jobCatalog,
  queueNames,
  retention,
  type JobData,
  type JobName,
  type QueueName,
} from '../../../jobs/catalog.js';
import { withTimeout } from '../../../infra/timeout.js';
import { waitForFinish } from '../../../infra/wait-for-finish.js';
import { JobResults } from '../../../infra/job-results.js';
import {
  isRedisUnavailable,
  logConnectionErrors,
  producerConnection,
  workerConnection,
  type RedisClient,
} from '../../../infra/redis.js';
import { redisKeys } from '../../../infra/redis-keys.js';
import { detached, queueTelemetry } from '../../../infra/telemetry/index.js';
import { ApiError } from '../errors.js';

export type Queues = {
  queue(name: QueueName): Queue;
  /** The process's one QueueEvents for a queue (created on first use). */
  events(name: QueueName): QueueEvents;
  /**
   * Adds a job (idempotent on its id) and waits at most `waitMs` for its result. A job that vanishes from the
   * queue meanwhile (lost in a Redis Cluster failover) is added again, after `beforeRequeue`.
   */
  enqueueAndWait<N extends JobName, R>(
    name: N,
    data: JobData<N>,
    options: { jobId: string; waitMs: number; beforeRequeue?: () => Promise<void> },
  ): Promise<{ job: Job; result: R | undefined; timedOut: boolean }>;
  /**
   * Removes the job with this id if it has finished, so that adding the id again runs it again. Throws
   * rather than leave a finished job in place, whose old result the next add would hand back.
   */
  removeFinished(name: QueueName, jobId: string): Promise<void>;
  close(): Promise<void>;
};

declare module 'fastify' {
  interface FastifyInstance {
    queues: Queues;
  }
}

const redisUnavailable = () => new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });

const isFinished = (state: string) => state === 'completed' || state === 'failed';

/** How often a waiting request looks whether its job is still in the queue (see `enqueueAndWait`). */
const REQUEUE_CHECK_MS = 2_000;

/** The producers: one Queue and one QueueEvents per queue for the whole process, closed on shutdown. */
export default fp(
  async (app) => {
    const keys = redisKeys(app.config.QUEUE_PREFIX);
    const producer = producerConnection(app.config);
    logConnectionErrors(producer, app.log, 'api-producer');
    const queues = new Map<QueueName, Queue>();
    const events = new Map<QueueName, QueueEvents>();
    for (const name of queueNames) {
      const queue = new Queue(name, {
        connection: producer,
        prefix: keys.queuePrefix(name),
        ...queueTelemetry(),
      });
      queue.on('error', (err) => app.log.warn({ err: err.message, queue: name }, 'queue error'));
      queues.set(name, queue);
    }
    const eventConnections: RedisClient[] = [];
    const results = new JobResults(app.config, keys, app.log);
    /** Waits in progress, ended on close. */
    const pending = new Set<() => void>();
    const eventsFor = (name: QueueName) => {
      let qe = events.get(name);
      if (!qe) {
        const connection = workerConnection(app.config);
        logConnectionErrors(connection, app.log, `queue-events:${name}`);
        eventConnections.push(connection);
        // Created by the first request that waits: its reading loop must not join that request's trace.
        qe = detached(() => new QueueEvents(name, { connection, prefix: keys.queuePrefix(name) }));
        qe.on('error', (err) => app.log.warn({ err: err.message, queue: name }, 'queue events error'));
        events.set(name, qe);
      }
      return qe;
    };

    const api: Queues = {
      queue: (name) => queues.get(name)!,
      events: eventsFor,
      async enqueueAndWait<N extends JobName, R>(
        name: N,
        data: JobData<N>,
        {
          jobId,
          waitMs,
          beforeRequeue,
        }: { jobId: string; waitMs: number; beforeRequeue?: () => Promise<void> },
      ) {
        const spec = jobCatalog[name];
        const queueEvents = eventsFor(spec.queue);
        const parsed = spec.data.parse(data);
        const add = () => api.queue(spec.queue).add(name, parsed, { ...spec.options, ...retention, jobId });
        let job: Job;
        try {
          await queueEvents.waitUntilReady();
          job = await add();
        } catch (err) {
          if (isRedisUnavailable(err)) throw redisUnavailable();
          throw err;
        }
        const requeue = async () => {
          await beforeRequeue?.();
          await add();
          app.log.warn(
            { queue: spec.queue, job_id: jobId },
            'job gone from the queue while a request waited for it (lost in a Redis failover?): queued again',
          );
        };
        const result = await waitForFinish<R>(
          queueEvents,
          api.queue(spec.queue),
          job,
          waitMs,
          pending,
          results,
          { everyMs: REQUEUE_CHECK_MS, add: requeue },
        );
        return { job, ...result };
      },
      async removeFinished(name, id) {
        try {
          const job = await api.queue(name).getJob(id);
          if (!job || !isFinished(await job.getState())) return;
          try {
            await job.remove();
          } catch (err) {
            // Locked: another request already added the id again and a worker runs it; this one joins it.
            if (isFinished(await job.getState())) throw err;
          }
        } catch (err) {
          if (isRedisUnavailable(err)) throw redisUnavailable();
          throw err;
        }
      },
      async close() {
        for (const cancel of pending) cancel();
        // Bounded: after a Redis restart a QueueEvents' close can wait forever on its old blocking connection.
        await Promise.all(
          // silent-ok: shutting down; a close that fails or hangs leaves nothing to keep
          [...events.values()].map((e) => withTimeout(e.close(), 2_000).catch(() => undefined)),
        );
        for (const connection of eventConnections) connection.disconnect();
        await results.close();
        await Promise.all([...queues.values()].map((q) => q.close()));
        producer.disconnect();
      },
    };
    app.decorate('queues', api);
    app.addHook('onClose', async () => api.close());
  },
  { name: 'queues', dependencies: ['services'] },
);
