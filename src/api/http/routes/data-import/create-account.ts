import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CreationOutcome } from '../../../../use-cases/creation/from-process.js';
import { CreateRequests } from '../../../../use-cases/creation/create-request.js';
import { migrationRefusal } from '../../../../domain/supplier.js';
import { ruleCatalogue, validateCreateAccountRequest } from '../../../../domain/validation/index.js';
import { createAccountRequestSchema } from '../../../../schemas/post-import.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';
import { validationContext } from '../../validation.js';

const createdBody = z.object({ kraken_account_number: z.string() });

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

export default async function createAccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const requests = new CreateRequests(
    app.redis,
    app.storage,
    {
      enqueueAndWait: (data, options) =>
        app.queues.enqueueAndWait<'create-account', CreationOutcome>('create-account', data, options),
      jobState: (id) => app.queues.queue('account-creation').getJobState(id),
    },
    app.config,
  );

  app.post(
    '/account-import-process/process/',
    {
      schema: {
        tags: ['accounts'],
        operationId: 'createAccount',
        summary: 'Create the account from its staged data (runs on a worker; the request waits, bounded)',
        description:
          '201 with the new number. 400 for validation errors, `import_process_does_not_exist`, ' +
          '`operations_team_name_does_not_exist`, `account_import_process_already_imported`, `account_import_in_progress`, ' +
          '`dry_run_rolled_back`. 429 `concurrency_limit_exceeded` (not queued; see Retry-After). ' +
          '503 `account_creation_pending` when the wait runs out (the job keeps running) or `service_unavailable`.',
        body: withExample(createAccountRequestSchema, 'Create the staged account', examples.createAccount),
        response: {
          201: createdBody.describe('The account was created: its platform number.'),
          ...errorResponses([...bodyErrors, 429, ...commonErrors], {
            400:
              'request_failed_validation, account_failed_validation (staged data no longer valid), ' +
              'import_process_does_not_exist, operations_team_name_does_not_exist, ' +
              'account_import_process_already_imported (with both numbers), account_import_process_skipped, ' +
              'account_import_in_progress, import_supplier_migration_not_ongoing or dry_run_rolled_back.',
            503:
              'account_creation_pending (the wait ran out; the job keeps running; Retry-After: 10) or ' +
              'service_unavailable (Retry-After: 5).',
          }),
        },
      },
    },
    async (request, reply) => {
      const supplier = await request.tenant.findSupplier(field(request.body, 'import_supplier_code'));
      const result = validateCreateAccountRequest(request.body, validationContext(app, supplier));
      if (!result.ok) throw new ApiError('request_failed_validation', { errors: result.errors });
      const body = result.data;
      if (!supplier) {
        throw new ApiError('request_failed_validation', {
          errors: [
            {
              detail: `Import supplier ${body.import_supplier_code} does not exist.`,
              code: 'import_supplier_not_found',
              attr: 'import_supplier_code',
            },
          ],
        });
      }
      const notOngoing = migrationRefusal(supplier);
      if (notOngoing) throw new ApiError(notOngoing.code, { detail: notOngoing.detail });
      const answer = await requests.run({
        importSupplier: supplier.code,
        externalAccountNumber: body.external_account_number,
        teamId: () => app.storage.suppliers.teamIdByName(body.operations_team_name),
        dryRun: body.dry_run === true,
        requestId: request.id,
      });
      switch (answer.status) {
        case 'answered':
          if (!answer.outcome.ok) throw refusal(answer.outcome);
          reply.code(201);
          return { kraken_account_number: answer.outcome.kraken_account_number };
        case 'in_progress':
          throw new ApiError('account_import_in_progress');
        case 'limit_reached':
          throw new ApiError('concurrency_limit_exceeded', { headers: { 'retry-after': '1' } });
        case 'unknown_team':
          throw new ApiError('operations_team_name_does_not_exist');
        case 'redis_unavailable':
          throw new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
        case 'pending':
          throw new ApiError('account_creation_pending', { headers: { 'retry-after': '10' } });
      }
    },
  );
}

const ruleDescriptions = new Map<string, string>(ruleCatalogue.map((r) => [r.code, r.description]));

/**
 * A worker's refusal as its documented error. Invalid staged data comes back as the codes and paths the
 * worker found (job results hold no payload values), each with its code's catalogue description.
 */
function refusal(outcome: Exclude<CreationOutcome, { ok: true }>): ApiError {
  if (outcome.code === 'account_import_process_already_imported') {
    const { external_account_number, kraken_account_number } = outcome;
    return new ApiError(outcome.code, { fields: { external_account_number, kraken_account_number } });
  }
  if (outcome.code === 'account_failed_validation') {
    const errors = (outcome.errors ?? []).map(({ code, attr }) => ({
      code,
      attr,
      detail: ruleDescriptions.get(code) ?? 'The value is not valid.',
    }));
    return new ApiError(outcome.code, { errors });
  }
  // Only a scheduled task is ever superseded; a v1 create never is.
  if (outcome.code === 'task_superseded') return new ApiError('account_import_in_progress');
  return new ApiError(outcome.code, outcome.detail ? { detail: outcome.detail } : {});
}
