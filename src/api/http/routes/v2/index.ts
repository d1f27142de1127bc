import type { FastifyInstance } from 'fastify';
import v2AccountRoutes from './accounts.js';
import v2PlanRoutes from './plan.js';
import v2ProgressRoutes from './progress.js';
import v2ReconciliationRoutes from './reconciliation.js';
import v2TimelineRoutes from './timeline.js';

/** The v2 data import: behind a token like v1. */
export default async function v2Routes(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', app.authenticate);
  await app.register(v2AccountRoutes);
  await app.register(v2ProgressRoutes);
  await app.register(v2PlanRoutes);
  await app.register(v2ReconciliationRoutes);
  await app.register(v2TimelineRoutes);
}
