import type { FastifyInstance } from 'fastify';
import authPlugin from '../plugins/auth.js';
import docsPlugin from '../plugins/docs.js';
import tenancyPlugin from '../plugins/tenancy.js';
import dataImportRoutes from './data-import/index.js';
import graphqlRoutes from './graphql.js';
import v2Routes from './v2/index.js';

/**
 * The documented API: the docs plugin (which collects every route registered after it), authentication,
 * tenancy and the routes. Registered by the app, and by the offline OpenAPI builder over stand-in services,
 * so the two cannot drift apart.
 */
export async function registerDocumentedApi(app: FastifyInstance): Promise<void> {
  await app.register(docsPlugin);
  await app.register(authPlugin);
  await app.register(tenancyPlugin);
  await app.register(graphqlRoutes);
  await app.register(dataImportRoutes, { prefix: '/v1/data-import' });
  await app.register(v2Routes, { prefix: '/v2/data-import' });
}
