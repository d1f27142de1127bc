import type { FastifyInstance } from 'fastify';
import { pingDatabase } from '../../infra/mongo.js';
import { withTimeout } from '../../infra/timeout.js';

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
    const [database, redis] = await Promise.all([
      check(() => pingDatabase(app.db.conn, CHECK_TIMEOUT_MS)),
      check(() => withTimeout(app.redis.ping(), CHECK_TIMEOUT_MS)),
    ]);
    const ready = database === 'ok' && redis === 'ok';
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'unavailable', checks: { database, redis } };
  });
}
