import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateBillingDocumentsImport } from '../../../domain/validation/index.js';
import { billingDocumentsImportSchema } from '../../../schemas/post-import.js';
import { importBillingDocuments } from '../../../post-import/billing-documents.js';
import { accountLocks, refusalError, resolveImport, storage } from '../../post-import-target.js';

export default async function billingDocumentRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/historical-billing-documents/create/',
    {
      schema: {
        tags: ['post-import'],
        summary: 'Import the historical billing documents of one ledger (once per ledger)',
        description:
          'Refused with ledger_has_finalized_billing_document when the ledger already has one. 201 with an empty body.',
        body: billingDocumentsImportSchema,
        response: { 201: z.void().describe('Empty body') },
      },
    },
    async (request, reply) => {
      const { account, data } = await resolveImport(app, request, validateBillingDocumentsImport);
      const outcome = await importBillingDocuments(
        storage(app).journal,
        accountLocks(app),
        account._id,
        data.ledger_code,
        data,
        request.body as Record<string, unknown>,
        app.clock(),
      );
      if (!outcome.ok) throw refusalError(outcome.refusal);
      return reply.code(201).send();
    },
  );
}
