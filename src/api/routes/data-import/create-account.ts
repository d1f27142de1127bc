import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { CreationOutcome } from '../../../creation/create-account.js';
import { CreationSlots, slotMember } from '../../../creation/slots.js';
import { loadStagedPayload } from '../../../creation/staging.js';
import { retryTransient } from '../../../creation/transient.js';
import { validateAccount, validateCreateAccountRequest } from '../../../domain/validation/index.js';
import { processKey } from '../../../models/account-import-process.js';
import { createAccountRequestSchema } from '../../../schemas/post-import.js';
import { jobId } from '../../../workers/catalog.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';
import { validationContext } from '../../validation.js';

/** While a create job is in one of these states the account is IN_PROGRESS. */
export const PENDING_JOB_STATES: ReadonlySet<string> = new Set([
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
]);

const createdBody = z.object({ kraken_account_number: z.string() });

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

function redisUnavailable(): ApiError {
  return new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
}

export default async function createAccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const slots = new CreationSlots(app.redis, app.config);
  const { models } = app.db;
  // Teams are created by operators and never renamed or removed, so a found team's id can be remembered.
  const teamIds = new LRUCache<string, string>({ max: 1_000 });
  const findTeamId = async (name: string): Promise<string | null> => {
    const cached = teamIds.get(name);
    if (cached) return cached;
    const team = await models.OperationsTeam.findOne({ name }).select({ _id: 1 }).lean();
    if (team) teamIds.set(name, team._id.toHexString());
    return team ? team._id.toHexString() : null;
  };

  /** A refusal carrying only a code becomes its documented error; validation errors are recomputed here. */
  async function refusal(
    outcome: Exclude<CreationOutcome, { ok: true }>,
    processId: string,
    request: FastifyRequest,
  ): Promise<ApiError> {
    if (outcome.code === 'account_import_process_already_imported') {
      const { external_account_number, kraken_account_number } = outcome;
      return new ApiError(outcome.code, { fields: { external_account_number, kraken_account_number } });
    }
    if (outcome.code === 'account_failed_validation') {
      // Job results hold no payload data, so the errors are recomputed from the staged data.
      const process = await models.AccountImportProcess.findById(processId)
        .select({ importSupplier: 1 })
        .lean();
      const supplier = await request.tenant.findSupplier(process?.importSupplier);
      const staged = process ? await loadStagedPayload(models, processId) : null;
      const result = staged ? validateAccount(JSON.parse(staged), validationContext(app, supplier)) : null;
      return new ApiError(outcome.code, { errors: result && !result.ok ? result.errors : [] });
    }
    return new ApiError(outcome.code, outcome.detail ? { detail: outcome.detail } : {});
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
      if (supplier.status !== 'Ongoing') {
        throw new ApiError('import_supplier_migration_not_ongoing', {
          detail: `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
        });
      }
      const dryRun = body.dry_run === true;

      // The slot is the limit and the per-account lock at once, taken in one atomic step in Redis before any
      // other lookup, so a refusal at the limit costs next to nothing.
      const member = slotMember(supplier.code, body.external_account_number);
      const key = processKey(supplier.code, body.external_account_number);
      const slot = await slots.acquire(member, 'api', { claimFirst: !dryRun }).catch(() => {
        throw redisUnavailable();
      });
      if (slot.status === 'already_held') throw new ApiError('account_import_in_progress');
      if (slot.status === 'limit_reached')
        throw new ApiError('concurrency_limit_exceeded', { headers: { 'retry-after': '1' } });

      // Whether the account is staged, skipped or imported is the worker's to say (as the job's result): the
      // request path reads no process, so the queue hop costs Redis round trips only.
      const processId = key;
      let teamId: string, job: { id: string; attempt: number };
      try {
        const found = await findTeamId(body.operations_team_name);
        if (!found) throw new ApiError('operations_team_name_does_not_exist');
        teamId = found;
        job = slot.claimed
          ? { id: createJobId(processId, slot.attempt), attempt: slot.attempt }
          : await chooseJob(member, processId, slot, dryRun, request.id);
      } catch (err) {
        await slots.release(member).catch(() => undefined);
        throw err;
      }

      let onLost: (err: unknown) => void = () => undefined;
      const lost = new Promise<never>((_, reject) => (onLost = reject));
      // Renewed every second while waiting: the slot stays ours, and a Redis outage ends the wait at once.
      const stop = slots.keepAlive(member, (err) => onLost(err), 1_000);
      const waiting = app.queues.enqueueAndWait<'create-account', CreationOutcome>(
        'create-account',
        { processId, operationsTeamId: teamId, dryRun, attempt: job.attempt, requestId: request.id },
        { jobId: job.id, waitMs: app.config.ACCOUNT_CREATION_WAIT_MS },
      );
      waiting.catch(() => undefined);
      let settled: Awaited<typeof waiting>;
      try {
        settled = await Promise.race([waiting, lost]);
      } catch (err) {
        if (err instanceof ApiError) {
          await slots.release(member).catch(() => undefined);
          throw err;
        }
        // A lost connection (or a job that failed for good): the job, if queued, is picked up again later.
        if (
          !(await app.redis.ping().then(
            () => true,
            () => false,
          ))
        )
          throw redisUnavailable();
        throw err;
      } finally {
        stop();
      }
      if (settled.timedOut || settled.result === undefined) {
        // The slot lapses once nobody renews it: from then on the status endpoint finds the queued job by this id.
        await retryTransient(() =>
          models.AccountImportProcess.updateOne({ _id: processId }, { $set: { creationJobId: job.id } }),
        ).catch((err: unknown) => request.log.warn({ err }, 'could not record the pending create job'));
        throw new ApiError('account_creation_pending', { headers: { 'retry-after': '10' } });
      }
      const outcome = settled.result;
      if (!outcome.ok) throw await refusal(outcome, processId, request);
      reply.code(201);
      return { kraken_account_number: outcome.kraken_account_number };
    },
  );

  /**
   * Deterministic job ids: a real create is `create-<process>-<n>` where n counts accepted creates (kept in
   * Redis, see `CreationSlots.claimAttempt`; an account's first is claimed with its slot); a queued job left
   * behind by an earlier request is joined rather than duplicated, a finished or failed one is followed by
   * attempt n+1 (whose worker answers "already imported" when the account exists). A job marks its attempt
   * finished as it frees its slot (`slot.done`), before BullMQ moves it to completed, so a create right after
   * an answer never joins the job that gave it. A dry run is tied to its request. The account's slot, held by
   * this request, already serialises creates of one account; two claims that still raced (a slot lapsed
   * after its lease) saw the same n and so join the same job.
   */
  async function chooseJob(
    member: string,
    processId: string,
    slot: { attempt: number; done: number },
    dryRun: boolean,
    requestId: string,
  ): Promise<{ id: string; attempt: number }> {
    const { attempt } = slot;
    try {
      if (attempt > slot.done) {
        const state = await app.queues.queue('account-creation').getJobState(createJobId(processId, attempt));
        if (PENDING_JOB_STATES.has(state)) {
          if (dryRun) throw new ApiError('account_import_in_progress');
          return { id: createJobId(processId, attempt), attempt };
        }
      }
      if (dryRun) return { id: jobId('dryrun', encodeURIComponent(processId), requestId), attempt: 0 };
      const next = await slots.claimAttempt(member, attempt);
      return { id: createJobId(processId, next), attempt: next };
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw redisUnavailable();
    }
  }
}

/** The key holds the supplier's external number, which may contain ':' (not allowed in job ids). */
function createJobId(processId: string, attempt: number): string {
  return jobId('create', encodeURIComponent(processId), String(attempt));
}
