import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CreationOutcome } from '../../../../use-cases/creation/from-process.js';
import { CreateRequests } from '../../../../use-cases/creation/create-request.js';
import { CreationSlots, type ShareUse } from '../../../../use-cases/creation/slots.js';
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
  const slots = new CreationSlots(app.redis, app.config);

  /** The caller's share headers on an answer given before the slot step (a refusal of the request). */
  async function withShare<T>(
    reply: FastifyReply,
    organisationId: string,
    answer: () => Promise<T>,
  ): Promise<T> {
    try {
      return await answer();
    } catch (err) {
      if (organisationId && !reply.hasHeader(SHARE_HEADER)) {
        // silent-ok: the headers are left out when Redis cannot say; the refusal is the answer
        const share = await slots.usage(organisationId).catch(() => null);
        if (share) reply.headers(shareHeaders(share));
      }
      throw err;
    }
  }

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
    (request, reply) =>
      withShare(reply, String(request.principal?.organisationId ?? ''), async () => {
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
          organisationId: String(supplier.organisationId),
          importSupplier: supplier.code,
          externalAccountNumber: body.external_account_number,
          teamId: () => app.storage.suppliers.teamIdByName(body.operations_team_name),
          dryRun: body.dry_run === true,
          requestId: request.id,
        });
        if (answer.share) reply.headers(shareHeaders(answer.share));
        switch (answer.status) {
          case 'answered':
            if (!answer.outcome.ok) throw refusal(answer.outcome);
            reply.code(201);
            return { kraken_account_number: answer.outcome.kraken_account_number };
          case 'in_progress':
            throw new ApiError('account_import_in_progress');
          case 'limit_reached':
            throw new ApiError('concurrency_limit_exceeded', {
              headers: { 'retry-after': String(answer.retryAfterS) },
            });
          case 'unknown_team':
            throw new ApiError('operations_team_name_does_not_exist');
          case 'redis_unavailable':
            throw new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
          case 'pending':
            throw new ApiError('account_creation_pending', { headers: { 'retry-after': '10' } });
        }
      }),
  );
}

/** The header naming the slots the caller's organisation may hold at once now (see docs/api.md). */
const SHARE_HEADER = 'x-creation-share';

/**
 * The caller's share of the creation limit, in slots it may hold at once now (its fractional share rounded
 * up: under its share it may take one more), and what is left of it (absent: no limit).
 */
function shareHeaders(share: ShareUse): Record<string, string> {
  if (share.share <= 0) return {};
  const slots = Math.ceil(share.share - 1e-9);
  return {
    [SHARE_HEADER]: String(slots),
    'x-creation-share-remaining': String(Math.max(0, slots - share.inUse)),
  };
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
