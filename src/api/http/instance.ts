import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config } from '../../config.js';
import type { Clock } from '../../auth/tokens.js';
import type { Database } from '../../storage/database.js';
import { loggerOptions } from '../../logger.js';
import app from '../app.js';
import { MAX_PARAM_LENGTH } from './schemas.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Builds the Fastify server with the app registered; used by the `web` process and by tests. */
export type ServerDeps = {
  clock?: Clock;
  logStream?: DestinationStream;
  /** A database already open (tests keep it, to look at what was written); else the app opens its own. */
  database?: Database;
};

export async function createApiServer(config: Config, deps: ServerDeps = {}): Promise<FastifyInstance> {
  const server = Fastify({
    logger: {
      ...loggerOptions(config.LOG_LEVEL, 'web'),
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    bodyLimit: config.BODY_LIMIT_BYTES,
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    // Accept a caller's X-Request-Id when it is sane, so a migration script can correlate its own logs.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // A plugin's start may wait on Redis (a cluster's slots), the database and the validation threads loading
    // their code: on a busy machine that passed Fastify's default 10 s. A start that cannot finish still fails.
    pluginTimeout: 60_000,
  });
  await server.register(app, { config, clock: deps.clock, database: deps.database });
  return server;
}
