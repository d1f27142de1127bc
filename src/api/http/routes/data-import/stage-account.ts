import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { migrationRefusal } from '../../../../domain/supplier.js';
import { stageAccount } from '../../../../use-cases/creation/staging.js';
import { accountPayloadSchema } from '../../../../schemas/account.js';
import { ApiError } from '../../errors.js';
import { keepReceivedJson, receivedJson } from '../../received-json.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';
import { validateAccountRequest } from '../../validation.js';

const stagedBody = z.object({ import_supplier: z.string(), external_account_number: z.string() });

export default async function stageAccountRoutes(fastify: FastifyInstance): Promise<void> {
  keepReceivedJson(fastify);
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/account-import-process/create-or-update/',
    {
      schema: {
        tags: ['accounts'],
        operationId: 'stageAccount',
        summary: 'Stage account data (create or update), without creating the account',
        description:
          '201 the first time, 200 when staged data is replaced. 400 `account_failed_validation`, ' +
          '`account_import_process_already_imported` (with both numbers), `account_import_process_skipped` or ' +
          '`import_supplier_migration_not_ongoing`.',
        body: withExample(
          accountPayloadSchema,
          'A realistic DOMESTIC account: one holder, an electricity and a gas supply point, two ledgers with six months of history and an open period',
          examples.account,
        ),
        response: {
          200: stagedBody.describe('Staged earlier: the staged data was replaced.'),
          201: stagedBody.describe('Staged for the first time.'),
          ...errorResponses([...bodyErrors, ...commonErrors], {
            400:
              'account_failed_validation, account_import_process_already_imported (with both account numbers), ' +
              'account_import_process_skipped or import_supplier_migration_not_ongoing.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { supplier, data, validatedWith } = await validateAccountRequest(request, request.body);
      const refusal = migrationRefusal(supplier);
      if (refusal) throw new ApiError(refusal.code, { detail: refusal.detail });
      const outcome = await stageAccount(app.storage, {
        organisationId: supplier.organisationId,
        importSupplier: supplier.code,
        externalAccountNumber: data.external_account_number,
        // Stored as received (the text itself: transactions keep their original JSON), with what its
        // validation depended on: creation validates it again only if that changed.
        payload: receivedJson(request) ?? JSON.stringify(request.body),
        validatedWith,
        now: app.clock(),
      });
      if (outcome.status === 'already_imported') {
        throw new ApiError('account_import_process_already_imported', {
          fields: {
            external_account_number: data.external_account_number,
            kraken_account_number: outcome.krakenAccountNumber,
          },
        });
      }
      if (outcome.status === 'skipped') throw new ApiError('account_import_process_skipped');
      reply.code(outcome.status === 'created' ? 201 : 200);
      return { import_supplier: supplier.code, external_account_number: data.external_account_number };
    },
  );
}
