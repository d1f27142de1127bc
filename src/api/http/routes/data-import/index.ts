import type { FastifyInstance } from 'fastify';
import importStatusRoutes from './import-status.js';
import noteRoutes from './notes.js';
import transactionRoutes from './transactions.js';
import billingDocumentRoutes from './billing-documents.js';
import statementRoutes from './statements.js';
import paymentInstructionRoutes from './payment-instructions.js';
import validateAccountRoutes from './validate-account.js';
import stageAccountRoutes from './stage-account.js';
import createAccountRoutes from './create-account.js';
import catalogueRoutes from './catalogue.js';

/** Every data-import route requires a token; the hook here is the single gate. */
export default async function dataImportRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', app.authenticate);
  await app.register(importStatusRoutes);
  await app.register(noteRoutes);
  await app.register(transactionRoutes);
  await app.register(billingDocumentRoutes);
  await app.register(statementRoutes);
  await app.register(paymentInstructionRoutes);
  await app.register(validateAccountRoutes);
  await app.register(stageAccountRoutes);
  await app.register(createAccountRoutes);
  await app.register(catalogueRoutes);
}
