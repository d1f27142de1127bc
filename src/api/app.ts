import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { ZodType } from 'zod';
import type { Config } from '../config.js';
import type { Clock } from '../auth/tokens.js';
import type { Database } from '../storage/database.js';
import { registerErrorHandling } from './http/error-handler.js';
import metricsPlugin from './http/plugins/metrics.js';
import dashboardPlugin from './http/plugins/dashboard.js';
import queuesPlugin from './http/plugins/queues.js';
import servicesPlugin from './http/plugins/services.js';
import cohortsRoutes from './http/routes/cohorts.js';
import healthRoutes from './http/routes/health.js';
import { registerDocumentedApi } from './http/routes/index.js';

export type AppOptions = { config: Config; clock?: Clock; database?: Database };

/** The whole API as one plugin: dependencies, docs, error handling and routes. It does not listen. */
export default fp<AppOptions>(
  async (app: FastifyInstance, opts) => {
    // Bodies are validated in handlers by the domain validators, which report every error with its path;
    // route schemas still describe bodies for the OpenAPI document. Params and querystrings use zod here.
    app.setValidatorCompiler<ZodType>((req) =>
      req.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(req),
    );
    app.setSerializerCompiler(() => (data) => JSON.stringify(data));
    // Every body is JSON: without Fastify's default text/plain parser, any other media type is 415.
    app.removeContentTypeParser('text/plain');
    registerErrorHandling(app);

    app.addHook('onSend', async (request, reply) => {
      reply.header('x-request-id', request.id);
    });

    await app.register(servicesPlugin, { config: opts.config, clock: opts.clock, database: opts.database });
    await app.register(queuesPlugin);
    if (opts.config.METRICS_ENABLED) await app.register(metricsPlugin);
    await app.register(dashboardPlugin);
    // Health checks are not part of the documented API (nor behind authentication).
    await app.register(healthRoutes);
    // The cohort page: static, signs in on its own (not part of the documented API).
    await app.register(cohortsRoutes);
    await registerDocumentedApi(app);
  },
  { name: 'app' },
);
