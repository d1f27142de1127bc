import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { validateStatementsImport } from '../../../../domain/validation/index.js';
import { statementsImportSchema } from '../../../../schemas/post-import.js';
import { runStatementsImport } from '../../../../use-cases/post-import/statements.js';
import { refusalError, requestTarget } from '../../post-import-target.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

export default async function statementRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ctx = app.postImport;
  app.post(
    '/historical-statements/create/',
    {
      schema: {
        tags: ['post-import'],
        operationId: 'importHistoricalStatements',
        summary: 'Import historical statements (document references) onto a created account',
        description:
          'Answers 201 with the validated data. A statement_id already on the account refuses the request.',
        body: withExample(statementsImportSchema, 'The statement closed on 2025-03-31', examples.statements),
        response: {
          201: statementsImportSchema.describe('Created: the validated data.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], {
            400: 'request_failed_validation, historical_statement_already_exists or import_supplier_migration_not_ongoing.',
            404: 'account_not_found (the account must be created, not only staged) or import_supplier_not_found.',
          }),
        },
      },
    },
    async (request, reply) => {
      const target = await requestTarget(ctx, request, validateStatementsImport);
      const outcome = await runStatementsImport(ctx, target);
      if (!outcome.ok) throw refusalError(outcome.refusal);
      return reply.code(201).send(target.data);
    },
  );
}
