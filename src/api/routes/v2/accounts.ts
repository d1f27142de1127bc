import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { creationLookups } from '../../../creation/lookups.js';
import { CreationSlots } from '../../../creation/slots.js';
import { cancelTask, scheduleAccount, taskJobId, type TaskQueue } from '../../../creation/schedule.js';
import { processStatuses, type ProcessState } from '../../../domain/import-process/state.js';
import { taskWindow, type TaskWindow } from '../../../domain/import-process/window.js';
import { sortErrors, type FieldError } from '../../../domain/validation/field-error.js';
import { validateAccount, validateV2Envelope } from '../../../domain/validation/index.js';
import { processKey } from '../../../models/account-import-process.js';
import type { AccountPayload } from '../../../schemas/account.js';
import { formatUtcDatetime, pathIdentifier } from '../../../schemas/primitives.js';
import { v2AccountRequestSchema } from '../../../schemas/v2.js';
import { findProcess } from '../../../storage/import-processes.js';
import { storageFor } from '../../../storage/index.js';
import { describeEvent } from '../../../storage/process-events.js';
import { relayEvents } from '../../../webhooks/relay.js';
import { jobCatalog, retention } from '../../../jobs/catalog.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../openapi/examples.js';
import type { SupplierDoc } from '../../plugins/tenancy.js';
import { bodyErrors, commonErrors, errorBody, errorResponses, v2AlreadyImportedBody } from '../../schemas.js';
import { validationContext } from '../../validation.js';
import { validationFingerprint } from '../../../creation/validation-fingerprint.js';

const statusParams = z.object({
  import_supplier_code: pathIdentifier(64),
  external_account_number: pathIdentifier(128),
});
const eventBody = z.object({
  event: z.string().describe('EVENT_ACCOUNT_IMPORT_PROCESS_<CREATED|SCHEDULED|STARTED|PROCESSED|...>'),
  occurred_at: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
  data: z.record(z.string(), z.unknown()).describe('Codes, paths and numbers only.'),
});
const errorOfProcess = z.object({ code: z.string(), detail: z.string(), domain: z.string() });
const statusBody = z.object({
  status: z.enum(processStatuses),
  kraken_identifier: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
  latest_event: eventBody.nullable(),
  latest_error: errorOfProcess.nullable(),
});
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
 * event history and cancel. Same authentication and tenancy as v1; the account is validated by the v1 rules
 * with v1 paths, the task parameters at `task_params.<field>`.
 */
export default async function v2AccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { models } = app.db;
  const lookups = creationLookups(app.db, app.config);
  const creationQueue = () => app.queues.queue('account-creation');
  const slots = new CreationSlots(app.redis, app.config);
  const tasks: TaskQueue = {
    async add(processId, taskId, delayMs) {
      const spec = jobCatalog['run-import-task'];
      try {
        await creationQueue().add(
          'run-import-task',
          { processId, taskId, requestId: 'schedule' },
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

  /** The caller's import process, or 404 `not_found` (another organisation's is none). */
  async function processOf(request: FastifyRequest, code: string, external: string) {
    const supplier = await request.tenant.findSupplier(code);
    const process = supplier ? await findProcess(models, processKey(supplier.code, external)) : null;
    if (!process || (!process.stagedAt && !process.krakenAccountNumber)) throw new ApiError('not_found');
    return process;
  }

  /**
   * A task the process still waits for whose job is gone from the queue (a Redis Cluster failover loses what
   * the old master had not replicated) gets its job again, due at its window's start: whoever follows the
   * task's status (the migration client polls it) brings it back. Best effort; Redis down changes nothing.
   */
  async function requeueLostTask(processId: string, state: ProcessState): Promise<void> {
    if (state.status !== 'PENDING' || !state.task) return;
    const id = taskJobId(processId, state.task.id);
    try {
      if ((await creationQueue().getJobState(id)) !== 'unknown') return;
      await tasks.add(
        processId,
        state.task.id,
        Math.max(0, Date.parse(state.task.windowStart) - app.clock().getTime()),
      );
      app.log.warn({ job_id: id }, 'scheduled task had no job (lost in a Redis failover?): queued again');
    } catch {
      // Redis unavailable: the next status read tries again.
    }
  }

  /** The status body of a process: its history's state, or (no history) what its v1 state tells. */
  async function statusOf(
    process: NonNullable<Awaited<ReturnType<typeof findProcess>>>,
    options: { repair?: boolean } = {},
  ) {
    const state = await storageFor(models).events.state(process._id);
    if (options.repair) await requeueLostTask(process._id, state);
    // A process staged or created before events were recorded has no history: its v1 state tells.
    const status = state.status ?? (process.krakenAccountNumber ? 'PROCESSED' : 'PENDING');
    const latest = state.latestEvent;
    const updated = process.updatedAt ?? process.createdAt ?? new Date(0);
    const modified = latest && latest.occurredAt > updated ? latest.occurredAt : updated;
    return {
      status,
      kraken_identifier:
        status === 'PROCESSED' ? (state.krakenAccountNumber ?? process.krakenAccountNumber ?? null) : null,
      created_at: formatUtcDatetime(process.createdAt ?? updated),
      modified_at: formatUtcDatetime(modified),
      latest_event: latest ? describeEvent(latest) : null,
      latest_error: state.latestError,
    };
  }

  app.get(
    '/accounts/:import_supplier_code/:external_account_number/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'getAccountImportProcess',
        summary: 'Status of an account import, with its latest event and error',
        description:
          'PENDING (staged or scheduled), IN_PROGRESS, PROCESSED (with kraken_identifier), ERRORED, CANCELLED, ' +
          'DRY_RUN_SUCCEEDED or DRY_RUN_ERRORED. Accounts staged or created through v1 have a status too.',
        params: statusParams,
        response: {
          200: statusBody.describe('The status.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'request_failed_validation: a path parameter is longer than allowed or holds a control character (invalid_character).',
            404: 'not_found: no import process for this account.',
          }),
        },
      },
    },
    async (request) =>
      statusOf(
        await processOf(request, request.params.import_supplier_code, request.params.external_account_number),
        { repair: true },
      ),
  );

  app.get(
    '/accounts/:import_supplier_code/:external_account_number/events/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'listAccountImportEvents',
        summary: 'The whole event history of an account import, oldest first',
        params: statusParams,
        response: {
          200: z.array(eventBody).describe('The events, oldest first.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'request_failed_validation: a path parameter is longer than allowed or holds a control character (invalid_character).',
            404: 'not_found: no import process for this account.',
          }),
        },
      },
    },
    async (request) => {
      const process = await processOf(
        request,
        request.params.import_supplier_code,
        request.params.external_account_number,
      );
      return (await storageFor(models).events.history(process._id)).map(describeEvent);
    },
  );

  app.delete(
    '/accounts/:import_supplier_code/:external_account_number/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'cancelScheduledCreation',
        summary: 'Cancel a scheduled creation that has not started',
        description:
          '200 with the status body (CANCELLED). 400 `import_process_not_cancellable` once the task started or ' +
          'finished, or when nothing is scheduled. The staged data stays: a later schedule or v1 create works.',
        params: statusParams,
        response: {
          200: statusBody.describe('The status after the cancel.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'import_process_not_cancellable, or request_failed_validation for a path parameter.',
            404: 'not_found: no import process for this account.',
          }),
        },
      },
    },
    async (request) => {
      const process = await processOf(
        request,
        request.params.import_supplier_code,
        request.params.external_account_number,
      );
      const outcome = await cancelTask(
        models,
        tasks,
        process.importSupplier,
        process.externalAccountNumber,
        app.clock(),
      );
      if (outcome.status === 'not_found') throw new ApiError('not_found');
      if (outcome.status === 'not_cancellable') throw new ApiError('import_process_not_cancellable');
      await relayEvents(app.queues.queue('webhooks'), [outcome.recorded], request.id, {
        models: app.db.models,
      });
      return statusOf(process);
    },
  );
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const errorDetail = {
  operations_team_should_be_provided:
    'Name an operations team in the payload, or set a default team for the import supplier.',
  operations_team_name_does_not_exist: 'The operations team does not exist.',
} as const;
