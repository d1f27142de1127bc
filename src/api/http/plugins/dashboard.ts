import { timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import basicAuth from '@fastify/basic-auth';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { LRUCache } from 'lru-cache';
import { Counter, Gauge, Histogram } from 'prom-client';
import { WebhookFleetState } from '../../../use-cases/webhooks/fleet-state.js';
import { queueNames } from '../../../jobs/catalog.js';

const BASE = '/admin/queues';

/** The time in an event stream entry's id (`<ms>-<seq>`). */
const streamTime = (id: string): number => Number(id.slice(0, id.indexOf('-')));

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Operators' view of the queues: bull-board at /admin/queues behind the operator credentials (absent
 * without OPERATOR_PASSWORD), and queue metrics on /metrics (job counts by state, job durations).
 */
export default fp(
  async (app) => {
    const { OPERATOR_USERNAME: username, OPERATOR_PASSWORD: password } = app.config;
    if (password) {
      await app.register(async (scope) => {
        await scope.register(basicAuth, {
          validate: async (user, pass) => {
            if (!(sameSecret(user, username) && sameSecret(pass, password)))
              throw new Error('invalid operator credentials');
          },
          authenticate: { realm: 'queues' },
        });
        scope.addHook('onRequest', scope.basicAuth);
        // bull-board's page asks Google Fonts for its typefaces: the dashboard must work offline and call no
        // other host, so the page goes out without that stylesheet (the CSS falls back to the system's fonts).
        scope.addHook('onSend', async (_request, reply, payload) => {
          const type = String(reply.getHeader('content-type') ?? '');
          if (!type.startsWith('text/html') || typeof payload !== 'string') return payload;
          return payload.replace(/<link[^>]+href="https?:\/\/[^"]*"[^>]*>/g, '');
        });
        const serverAdapter = new FastifyAdapter();
        serverAdapter.setBasePath(BASE);
        createBullBoard({
          queues: queueNames.map((n) => new BullMQAdapter(app.queues.queue(n))),
          serverAdapter,
        });
        await scope.register(serverAdapter.registerPlugin(), { prefix: BASE });
      });
    }

    if (!app.hasDecorator('metrics')) return;
    const registry = app.metrics;
    new Gauge({
      name: 'queue_jobs',
      help: 'Jobs per queue and state (waiting, active, delayed, failed, completed)',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        for (const name of queueNames) {
          const counts = await app.queues
            .queue(name)
            .getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed')
            // silent-ok: a scrape while Redis is down shows no queue counts (the readiness probe says why)
            .catch(() => null);
          for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: name, state }, n);
        }
      },
    });
    // Webhook deliveries happen on the workers, which serve no HTTP: their counters live in Redis.
    const webhooks = new WebhookFleetState(app.redis, app.config.QUEUE_PREFIX);
    new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by event type and outcome (delivered, retried, failed), fleet-wide',
      labelNames: ['type', 'outcome'],
      registers: [registry],
      async collect() {
        // silent-ok: a scrape while Redis is down shows no delivery counts (the readiness probe says why)
        const rows = await webhooks.counters().catch(() => null);
        if (!rows) return;
        this.reset();
        for (const { type, outcome, count } of rows) this.inc({ type, outcome }, count);
      },
    });
    new Gauge({
      name: 'webhook_oldest_undelivered_event_age_seconds',
      help: 'Age of the oldest event with a webhook delivery neither delivered nor failed yet (0: none)',
      registers: [registry],
      async collect() {
        // silent-ok: a scrape while Redis is down leaves the age as it was (the readiness probe says why)
        const age = await webhooks.oldestUndeliveredAgeSeconds().catch(() => null);
        if (age !== null) this.set(age);
      },
    });
    // Failed progress counter updates: each process adds its own to a Redis counter once Redis answers again
    // (they fail when it does not); this pod's not yet added are counted here too.
    const counters = app.storage.progress;
    new Counter({
      name: 'progress_counter_failures_total',
      help: 'Cohort progress counter updates that failed (the supplier’s counts are then rebuilt), fleet-wide',
      registers: [registry],
      async collect() {
        if (!counters) return;
        // silent-ok: while Redis is down the fleet's tally cannot be read; this pod's own failures still show
        const fleet = await counters.fleetFailures().catch(() => 0);
        this.reset();
        this.inc(fleet + counters.failures.unreported());
      },
    });
    const duration = new Histogram({
      name: 'queue_job_duration_seconds',
      help: 'Processing time of finished jobs (as seen by this API process), by queue and outcome',
      labelNames: ['queue', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    });
    for (const name of queueNames) {
      const events = app.queues.events(name);
      // From the queue's event stream alone, without reading the job: an entry's id is the Redis server's time
      // in milliseconds, so a job's last activation and its completion give its processing time (what BullMQ's
      // processedOn and finishedOn say). Every API pod sees every event; bounded, the oldest forgotten.
      const activeAt = new LRUCache<string, number>({ max: 10_000 });
      events.on('active', ({ jobId }: { jobId: string }, id: string) => activeAt.set(jobId, streamTime(id)));
      const observe =
        (outcome: string) =>
        ({ jobId }: { jobId: string }, id: string) => {
          const from = activeAt.get(jobId);
          if (from === undefined) return;
          activeAt.delete(jobId);
          duration.observe({ queue: name, outcome }, Math.max(0, streamTime(id) - from) / 1000);
        };
      events.on('completed', observe('completed'));
      events.on('failed', observe('failed'));
    }
  },
  { name: 'dashboard', dependencies: ['queues'] },
);
