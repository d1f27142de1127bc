import { timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import basicAuth from '@fastify/basic-auth';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Job } from 'bullmq';
import { Counter, Gauge, Histogram } from 'prom-client';
import { WebhookFleetState } from '../../webhooks/fleet-state.js';
import { queueNames } from '../../jobs/catalog.js';

const BASE = '/admin/queues';

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
        const age = await webhooks.oldestUndeliveredAgeSeconds().catch(() => null);
        if (age !== null) this.set(age);
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
      const observe =
        (outcome: string) =>
        ({ jobId }: { jobId: string }) => {
          void Job.fromId(app.queues.queue(name), jobId)
            .then((job) => {
              if (job?.processedOn && job.finishedOn)
                duration.observe({ queue: name, outcome }, (job.finishedOn - job.processedOn) / 1000);
            })
            .catch(() => undefined);
        };
      events.on('completed', observe('completed'));
      events.on('failed', observe('failed'));
    }
  },
  { name: 'dashboard', dependencies: ['queues'] },
);
