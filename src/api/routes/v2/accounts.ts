import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { creationLookups } from '../../../creation/lookups.js';
import { CreationSlots } from '../../../creation/slots.js';
import { scheduleAccount, taskJobId, type TaskQueue } from '../../../creation/schedule.js';
import { taskWindow, type TaskWindow } from '../../../domain/import-process/window.js';
import { sortErrors, type FieldError } from '../../../domain/validation/field-error.js';
import { validateAccount, validateV2Envelope } from '../../../domain/validation/index.js';
import type { AccountPayload } from '../../../schemas/account.js';
import { v2AccountRequestSchema } from '../../../schemas/v2.js';
import { jobCatalog, retention } from '../../../jobs/catalog.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../openapi/examples.js';
import type { SupplierDoc } from '../../plugins/tenancy.js';
import { bodyErrors, commonErrors, errorBody, errorResponses, v2AlreadyImportedBody } from '../../schemas.js';
import { validationContext } from '../../validation.js';
import { validationFingerprint } from '../../../creation/validation-fingerprint.js';
import v2ImportProcessRoutes from './import-process.js';

const emptyBody = z.null().describe('An empty body.');

type Checked = {
  supplier: SupplierDoc;
  data: AccountPayload;
  /** The fingerprint of the account's validation (see `creation/validation-fingerprint.ts`). */
  validatedWith: string;
  dryRun: boolean;
  window: TaskWindow | null;
};

/**
 * The v2 data import: validate, schedule (a creation task that runs inside a window on the workers), status,
 * event history and cancel (these three in ./import-process.ts). Same authentication and tenancy as v1; the
 * account is validated by the v1 rules with v1 paths, the task parameters at `task_params.<field>`.
 */
export default async function v2AccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { models } = app.db;
  const lookups = creationLookups(app.db, app.config);
  const creationQueue = () => app.queues.queue('account-creation');
  const slots = new CreationSlots(app.redis, app.config);
  const tasks: TaskQueue = {
    async add(processId, taskId, delayMs, hints) {
      const spec = jobCatalog['run-import-task'];
      try {
        await creationQueue().add(
          'run-import-task',
          { processId, taskId, ...hints, requestId: 'schedule' },
          { ...spec.options, ...retention, jobId: taskJobId(processId, taskId), delay: delayMs },
        );
      } catch {
        throw new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
      }
    },
    async remove(processId, taskId) {
      await creationQueue().remove(taskJobId(processId, taskId));
    },
    // The slot member is the process key. Unknown while Redis is down: the schedule's own enqueue then fails.
    // silent-ok: Redis down is reported by /readyz, and the enqueue that follows fails with 503
    creating: (processId) => slots.isHeld(processId).catch(() => false),
  };

  /** Envelope, account and window, every error at once; the caller's supplier must be its own. */
  async function check(request: FastifyRequest, scheduling: boolean): Promise<Checked> {
    const body = request.body;
    const candidate =
      typeof body === 'object' && body !== null ? (body as Record<string, unknown>).payload : undefined;
    // Anything but a JSON object is refused at `payload` by the envelope; only an object is an account.
    const payload = isObject(candidate) ? candidate : undefined;
    const code = payload?.import_supplier;
    const supplier = await request.tenant.findSupplier(code);
    const ctx = validationContext(app, supplier);
    const envelope = validateV2Envelope(body, ctx, { taskParamsRequired: scheduling });
    const errors: FieldError[] = envelope.ok ? [] : envelope.errors;
    const account = payload ? validateAccount(payload, ctx) : null;
    if (account && !account.ok) errors.push(...account.errors);
    if (account && !supplier && typeof code === 'string' && code.length > 0) {
      errors.push({
        detail: `Import supplier ${code.slice(0, 64)} does not exist.`,
        code: 'import_supplier_not_found',
        attr: 'import_supplier',
      });
    }
    const params = envelope.ok ? envelope.data.task_params : undefined;
    const window = params || scheduling ? taskWindow(params ?? {}, app.clock()) : null;
    if (window && !window.ok) errors.push(...window.errors);
    const code400 = scheduling ? 'import_process_failed_validation' : 'account_failed_validation';
    if (errors.length > 0 || !account?.ok || !supplier || (window && !window.ok)) {
      throw new ApiError(code400, {
        errors: sortErrors(errors),
        ...(scheduling ? { fields: { domain: 'import_process' } } : {}),
      });
    }
    return {
      supplier,
      data: account.data,
      validatedWith: validationFingerprint(ctx),
      dryRun: params?.is_dry_run === true,
      window: window && window.ok ? window.window : null,
    };
  }

  /** The payload's team, else the supplier's default; a named team must exist. */
  async function teamFor(supplier: SupplierDoc, data: AccountPayload): Promise<string> {
    const teamError = (code: 'operations_team_should_be_provided' | 'operations_team_name_does_not_exist') =>
      new ApiError(code, {
        errors: [{ code, attr: 'operations_team_name', detail: errorDetail[code] }],
      });
    if (data.operations_team_name !== undefined) {
      const id = await lookups.teamIdByName(data.operations_team_name);
      if (!id) throw teamError('operations_team_name_does_not_exist');
      return id;
    }
    if (supplier.defaultOperationsTeamId) return supplier.defaultOperationsTeamId.toHexString();
    throw teamError('operations_team_should_be_provided');
  }

  app.post(
    '/accounts/validate/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'validateScheduledAccount',
        summary: 'Validate an account and, optionally, task parameters (nothing is stored)',
        description:
          '200 with an empty body when valid. 400 `account_failed_validation`: account errors at their v1 paths ' +
          '(`customers.0.email`), task parameter errors at `task_params.<field>`, a missing or non-object ' +
          'payload at `payload`.',
        body: withExample(
          v2AccountRequestSchema.partial({ task_params: true }),
          'A realistic account with the task parameters a schedule would send',
          examples.scheduleAccount,
        ),
        response: {
          200: emptyBody,
          ...errorResponses([...bodyErrors, ...commonErrors]),
        },
      },
    },
    async (request, reply) => {
      await check(request, false);
      return reply.code(200).send(undefined as never);
    },
  );

  app.post(
    '/accounts/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'scheduleAccountCreation',
        summary: 'Stage an account and schedule its creation inside a window',
        description:
          '201 with an empty body: the payload is staged as v1 stages it and a task is queued to create the ' +
          'account inside the window (it waits for a slot of the global creation limit; it is never refused ' +
          'for it). 400 `import_process_failed_validation` (with `domain` and every error), ' +
          '`operations_team_should_be_provided`, `operations_team_name_does_not_exist`, ' +
          '`account_import_in_progress`, `account_import_process_skipped`, ' +
          '`import_supplier_migration_not_ongoing`, or the already-imported body ' +
          '`{"non_field_errors": {"detail", "code": "account_import_process_already_imported"}, "account_id"}`. ' +
          'A refused schedule changes nothing.',
        body: withExample(
          v2AccountRequestSchema,
          'Create a realistic account as soon as a creation slot is free',
          examples.scheduleAccount,
        ),
        response: {
          201: emptyBody,
          ...errorResponses([...bodyErrors, ...commonErrors]),
          400: z
            .union([errorBody, v2AlreadyImportedBody])
            .describe(
              'The documented error body (with `domain` on import_process_failed_validation), or the ' +
                "platform's already-imported shape.",
            ),
        },
      },
    },
    async (request, reply) => {
      const { supplier, data, validatedWith, dryRun, window } = await check(request, true);
      if (supplier.status !== 'Ongoing') {
        throw new ApiError('import_supplier_migration_not_ongoing', {
          detail: `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
        });
      }
      const operationsTeamId = await teamFor(supplier, data);
      const outcome = await scheduleAccount(models, tasks, {
        organisationId: supplier.organisationId,
        importSupplier: supplier.code,
        externalAccountNumber: data.external_account_number,
        payload: JSON.stringify((request.body as { payload: unknown }).payload),
        validatedWith,
        now: app.clock(),
        task: { ...window!, dryRun, operationsTeamId },
      });
      switch (outcome.status) {
        case 'scheduled':
          return reply.code(201).send(undefined as never);
        case 'in_progress':
          throw new ApiError('account_import_in_progress');
        case 'skipped':
          throw new ApiError('account_import_process_skipped');
        case 'already_imported':
          // The platform's own shape for this refusal, kept exactly.
          return reply.code(400).send({
            non_field_errors: {
              detail: 'The account has already been imported.',
              code: 'account_import_process_already_imported',
            },
            account_id: outcome.krakenAccountNumber,
          });
      }
    },
  );

  await app.register(v2ImportProcessRoutes, { tasks, creationQueue });
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const errorDetail = {
  operations_team_should_be_provided:
    'Name an operations team in the payload, or set a default team for the import supplier.',
  operations_team_name_does_not_exist: 'The operations team does not exist.',
} as const;
