import fp from 'fastify-plugin';
import type { Config } from '../../../config.js';
import { openDatabase, type Database } from '../../../storage/database.js';
import { createStorage, type Storage } from '../../../storage/index.js';
import { producerConnection, type RedisClient } from '../../../infra/redis.js';
import { TokenService, type Clock } from '../../../auth/tokens.js';
import { createWebhookProcess, type WebhookProcess } from '../../../use-cases/webhooks/webhook-process.js';
import { apiPostImportContext } from '../post-import-target.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    clock: Clock;
    storage: Storage;
    /** What this process keeps for the webhooks it sends (fleet state, endpoint places, first attempts). */
    webhooks: WebhookProcess;
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

export type ServicesOptions = { config: Config; clock?: Clock; database?: Database };

/** The process-wide dependencies: config, clock, the storage object (one database connection), one Redis connection. */
export default fp<ServicesOptions>(
  async (app, { config, clock = () => new Date(), database }) => {
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
    const redis = producerConnection(config);
    redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis connection error'));
    app.decorate<RedisClient>('redis', redis);
    let db: Database;
    try {
      db = database ?? (await openDatabase(config));
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    const storage = createStorage(db, { config, redis, log: app.log });
    app.decorate('storage', storage);
    const webhooks = createWebhookProcess({ config, log: app.log, redis, clock });
    app.decorate('webhooks', webhooks);
    app.decorate('postImport', apiPostImportContext(app, webhooks));
    // Give Redis a moment at boot; if it is down the process still starts and /readyz says so.
    await waitForReady(redis, 5_000);
    app.addHook('onClose', async () => {
      // First attempts made by this pod's requests (each at most a second's wait for a place, then
      // WEBHOOK_TIMEOUT_MS).
      await webhooks.drain();
      redis.disconnect();
      await storage.close();
    });
  },
  { name: 'services' },
);
