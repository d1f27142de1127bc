import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateTransactionsImport } from '../../../../domain/validation/index.js';
import { transactionsImportSchema } from '../../../../schemas/post-import.js';
import { refusalError, requestTarget } from '../../post-import-target.js';
import { runTransactionsImport } from '../../../../use-cases/post-import/transactions.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { commonErrors, errorBody, errorResponses } from '../../schemas.js';

const flag = z
  .enum(['true', 'false', 'True', 'False', '1', '0'])
  .transform((v) => v === 'true' || v === 'True' || v === '1')
  .default(true);

const query = z.object({ check_previously_added: flag, force_add_to_current_statement: flag });

const result = z.object({
  status: z.enum(['TRANSACTION_ADDED_TO_ACCOUNT', 'TRANSACTION_ALREADY_EXISTS']),
  transaction_data: z.record(z.string(), z.unknown()),
});
const importError = z.object({
  status: z.literal('TRANSACTION_IMPORT_ERROR'),
  error_detail: z.string(),
  transaction_data: z.record(z.string(), z.unknown()),
});

export default async function transactionRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ctx = app.postImport;
  app.post(
    '/transactions/create/',
    {
      schema: {
        tags: ['post-import'],
        operationId: 'importTransactions',
        summary: 'Import financial transactions onto a created account',
        description:
          "Transactions dated before the ledger's open statement period are re-dated to its first day (with a note) unless " +
          '`force_add_to_current_statement=false`, which refuses the whole batch. `dry_run: true` answers 200 with the ' +
          'statuses the import would give and writes nothing.',
        querystring: query,
        body: withExample(
          transactionsImportSchema,
          'A payment and a late payment fee on the electricity ledger',
          examples.transactions,
        ),
        response: {
          200: z
            .object({ results: z.array(result) })
            .describe('dry_run: the statuses the import would give; nothing was written.'),
          201: z
            .object({ results: z.array(result) })
            .describe('One result per transaction, in the order sent.'),
          400: z
            .union([importError, errorBody])
            .describe(
              'The transaction import error (TRANSACTION_IMPORT_ERROR, the first failing transaction; nothing of ' +
                'the batch was written), or the error body for validation errors, ledger_not_found and ' +
                'import_supplier_migration_not_ongoing.',
            ),
          ...errorResponses([413, 415, 404, ...commonErrors], {
            404: 'account_not_found (the account must be created, not only staged) or import_supplier_not_found.',
          }),
        },
      },
    },
    async (request, reply) => {
      const target = await requestTarget(ctx, request, validateTransactionsImport);
      const outcome = await runTransactionsImport(ctx, target, {
        checkPreviouslyAdded: request.query.check_previously_added,
        forceAddToCurrentStatement: request.query.force_add_to_current_statement,
      });
      if (outcome.ok) return reply.code(target.data.dry_run ? 200 : 201).send({ results: outcome.results });
      // A failed plan is the transaction import's own 400 body (interface: Import financial transactions).
      if ('error' in outcome) return reply.code(400).send(outcome.error);
      throw refusalError(outcome.refusal);
    },
  );
}
