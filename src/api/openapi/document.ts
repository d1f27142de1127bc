import Fastify from 'fastify';
import fp from 'fastify-plugin';
import { TokenService } from '../../auth/tokens.js';
import { loadConfig } from '../../config.js';
import type { Storage } from '../../storage/index.js';
import type { Queues } from '../http/plugins/queues.js';
import { registerDocumentedApi } from '../http/routes/index.js';
import { MAX_PARAM_LENGTH } from '../http/schemas.js';
import { unconnectedClient } from '../../infra/redis.js';

// The OpenAPI document without a database or Redis (for the linter and for tooling): the app's documented API
// (`registerDocumentedApi`, shared with app.ts) registered over stand-ins of the services that are never
// opened, since building the document runs no request. A test checks that it equals the document a running service serves at /docs/json.

const offline = (): never => {
  throw new Error('the offline OpenAPI app serves no requests');
};

/**
 * A storage whose every repository refuses (`offline`): registering the routes reads the repositories, to hand
 * them on, and calls none. Nothing is taken for a promise (`then` stays undefined).
 */
function offlineStorage(): Storage {
  const refusing = (key: string | symbol) => (key === 'then' ? undefined : offline);
  const repository = new Proxy({}, { get: (_target, key) => refusing(key) });
  return new Proxy({} as Storage, { get: (_target, key) => (key === 'then' ? undefined : repository) });
}

/** The `services` and `queues` plugins' decorations, none of them connected. */
const standIns = fp(
  async (app) => {
    const config = loadConfig({
      JWT_SECRET: 'offline-openapi-document-secret-0123456789',
      API_KEY_HASH_SECRET: 'offline-openapi-document-secret-0123456789',
      VALIDATION_THREADS: '0',
    });
    app.decorate('config', config);
    app.decorate('clock', () => new Date());
    app.decorate(
      'tokens',
      new TokenService(
        { secret: config.JWT_SECRET, accessTtlSeconds: 1, refreshTtlSeconds: 1 },
        () => new Date(),
      ),
    );
    app.decorate('storage', offlineStorage());
    app.decorate('redis', unconnectedClient());
    const queues: Queues = {
      queue: offline,
      events: offline,
      enqueueAndWait: offline,
      removeFinished: offline,
      close: async () => {},
    };
    app.decorate('queues', queues);
    app.addHook('onClose', async () => {
      app.redis.disconnect();
    });
  },
  { name: 'services' },
);

const queuesName = fp(async () => {}, { name: 'queues', dependencies: ['services'] });

/** The OpenAPI document of the API, as the running service serves it. */
export async function buildOpenApiDocument(): Promise<Record<string, unknown>> {
  const app = Fastify({
    logger: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
  });
  // As the app: bodies are checked by the domain validators, answers serialised as they are.
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  try {
    await app.register(standIns);
    await app.register(queuesName);
    await registerDocumentedApi(app);
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
  }
}
