import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateBillingDocumentsImport } from '../../../../domain/validation/index.js';
import { billingDocumentsImportSchema } from '../../../../schemas/post-import.js';
import { runBillingDocumentsImport } from '../../../../use-cases/post-import/billing-documents.js';
import { refusalError, requestTarget } from '../../post-import-target.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

export default async function billingDocumentRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ctx = app.postImport;
  app.post(
    '/historical-billing-documents/create/',
    {
      schema: {
        tags: ['post-import'],
        operationId: 'importHistoricalBillingDocuments',
        summary: 'Import the historical billing documents of one ledger (once per ledger)',
        description:
          'Refused with ledger_has_finalized_billing_document when the ledger already has one; its errors name ' +
          'billing_documents_already_imported when that one is this same import sent again. 201 with an empty body.',
        body: withExample(
          billingDocumentsImportSchema,
          'One period-based bill of the gas ledger and its payment',
          examples.billingDocuments,
        ),
        response: {
          201: z.void().describe('Created: the documents and transactions were imported. Empty body.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], {
            400:
              'request_failed_validation (a transaction id already on the account is transaction_already_exists), ' +
              'ledger_not_found, ledger_has_finalized_billing_document (with the field error ' +
              'billing_documents_already_imported at ledger_code when the import on the ledger is this same request: ' +
              'a re-send) or import_supplier_migration_not_ongoing.',
            404: 'account_not_found (the account must be created, not only staged) or import_supplier_not_found.',
          }),
        },
      },
    },
    async (request, reply) => {
      const target = await requestTarget(ctx, request, validateBillingDocumentsImport);
      const outcome = await runBillingDocumentsImport(ctx, target);
      if (!outcome.ok) throw refusalError(outcome.refusal);
      return reply.code(201).send();
    },
  );
}
