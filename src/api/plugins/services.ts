import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { openDatabase, type Database } from '../../infra/mongo.js';
import { producerConnection, type RedisClient } from '../../infra/redis.js';
import { TokenService, type Clock } from '../../auth/tokens.js';
import { attachProgressCounters } from '../../storage/progress-counters.js';
import { webhookStore } from '../../storage/webhooks.js';
import { attachDirectDeliveries } from '../../webhooks/direct-deliveries.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    clock: Clock;
    db: Database;
    redis: RedisClient;
    tokens: TokenService;
  }
}

function waitForReady(redis: RedisClient, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
  });
}

export type ServicesOptions = { config: Config; clock?: Clock };

/** The process-wide dependencies: config, clock, one database connection, one Redis connection. */
export default fp<ServicesOptions>(
  async (app, { config, clock = () => new Date() }) => {
    app.decorate('config', config);
    app.decorate('clock', clock);
    app.decorate(
      'tokens',
      new TokenService(
        {
          secret: config.JWT_SECRET,
          accessTtlSeconds: config.TOKEN_TTL_SECONDS,
          refreshTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
        },
        clock,
      ),
    );
    const db = await openDatabase(config);
    app.decorate('db', db);
    const redis = producerConnection(config);
    redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis connection error'));
    app.decorate<RedisClient>('redis', redis);
    attachProgressCounters(db.models, redis, config.QUEUE_PREFIX, app.log);
    webhookStore(db.models).rememberAudience(config.WEBHOOK_ACTIVATION_DELAY_MS);
    const directDeliveries = attachDirectDeliveries(redis, { config, log: app.log, clock });
    // Give Redis a moment at boot; if it is down the process still starts and /readyz says so.
    await waitForReady(redis, 5_000);
    app.addHook('onClose', async () => {
      // First attempts made by this pod's requests (each at most a second's wait for a place, then
      // WEBHOOK_TIMEOUT_MS).
      await directDeliveries.drain();
      redis.disconnect();
      await db.close();
    });
  },
  { name: 'services' },
);
