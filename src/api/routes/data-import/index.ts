import type { FastifyInstance } from 'fastify';
import importStatusRoutes from './import-status.js';
import validateAccountRoutes from './validate-account.js';

/** Every data-import route requires a token; the hook here is the single gate. */
export default async function dataImportRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', app.authenticate);
  await app.register(importStatusRoutes);
  await app.register(validateAccountRoutes);
}
