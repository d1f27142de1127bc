import type { FastifyInstance } from 'fastify';
import { redisReady } from '../../../infra/redis.js';
import { withTimeout } from '../../../infra/timeout.js';
import { queueNames } from '../../../jobs/catalog.js';

const CHECK_TIMEOUT_MS = 1_000;

async function check(fn: () => Promise<unknown>): Promise<'ok' | 'down'> {
  try {
    await fn();
    return 'ok';
  } catch {
    return 'down';
  }
}

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const [database, redis, queues] = await Promise.all([
      check(() => app.storage.ping(CHECK_TIMEOUT_MS)),
      check(() => withTimeout(redisReady(app.redis), CHECK_TIMEOUT_MS)),
      // Each queue's own keys (on a cluster: the master that holds its slot) answer a read.
      check(() =>
        withTimeout(
          Promise.all(queueNames.map((name) => app.queues.queue(name).getJobCounts('waiting'))),
          CHECK_TIMEOUT_MS,
        ),
      ),
    ]);
    const ready = database === 'ok' && redis === 'ok' && queues === 'ok';
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'unavailable', checks: { database, redis, queues } };
  });
}
