import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateTransactionsImport } from '../../../domain/validation/index.js';
import { transactionsImportSchema } from '../../../schemas/post-import.js';
import { ledgerLocks, resolveImport } from '../../../post-import/target.js';
import {
  dryRunResults,
  findLedger,
  importTransactions,
  planTransactions,
} from '../../../post-import/transactions.js';

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
  app.post(
    '/transactions/create/',
    {
      schema: {
        tags: ['post-import'],
        summary: 'Import financial transactions onto a created account',
        description:
          "Transactions dated before the ledger's open statement period are re-dated to its first day (with a note) unless " +
          '`force_add_to_current_statement=false`, which refuses the whole batch. `dry_run: true` answers 200 with the ' +
          'statuses the import would give and writes nothing.',
        querystring: query,
        body: transactionsImportSchema,
        response: {
          200: z.object({ results: z.array(result) }),
          201: z.object({ results: z.array(result) }),
          400: importError,
        },
      },
    },
    async (request, reply) => {
      const { account, data } = await resolveImport(app, request, validateTransactionsImport);
      const ledger = await findLedger(app.db.models, account._id, data.ledger_code);
      const raws = (request.body as { transactions: Record<string, unknown>[] }).transactions;
      const options = {
        checkPreviouslyAdded: request.query.check_previously_added,
        forceAddToCurrentStatement: request.query.force_add_to_current_statement,
      };
      // A failed plan is the transaction import's own 400 body (interface: Import financial transactions).
      if (data.dry_run) {
        const plan = await planTransactions(
          app.db.models,
          account._id,
          ledger,
          data.transactions,
          raws,
          options,
        );
        return plan.ok
          ? reply.code(200).send({ results: dryRunResults(plan) })
          : reply.code(400).send(plan.error);
      }
      const outcome = await importTransactions(
        app.db.models,
        ledgerLocks(app),
        account._id,
        ledger._id,
        data.transactions,
        raws,
        options,
        app.clock(),
      );
      return outcome.ok
        ? reply.code(201).send({ results: outcome.results })
        : reply.code(400).send(outcome.error);
    },
  );
}
