import type { Queue } from 'bullmq';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CreationSlots } from '../../../../use-cases/creation/slots.js';
import { taskJobId, type TaskQueue } from '../../../../use-cases/creation/schedule.js';
import {
  checkRequest,
  scheduleCreation,
  supplierCodeOf,
  type CheckedRequest,
  type ScheduledCreationOutcome,
} from '../../../../use-cases/creation/scheduled-creation.js';
import { v2AccountRequestSchema } from '../../../../schemas/v2.js';
import { jobCatalog, retention } from '../../../../jobs/catalog.js';
import { ApiError } from '../../errors.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorBody, errorResponses, v2AlreadyImportedBody } from '../../schemas.js';
import { validationContext } from '../../validation.js';
import v2ImportProcessRoutes from './import-process.js';

const emptyBody = z.null().describe('An empty body.');

/**
 * The v2 data import: validate, schedule (a creation task that runs inside a window on the workers), status,
 * event history and cancel (these three in ./import-process.ts). Same authentication and tenancy as v1; the
 * account is validated by the v1 rules with v1 paths, the task parameters at `task_params.<field>`.
 */
export default async function v2AccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const creationQueue = () => app.queues.queue('account-creation');
  const tasks = taskQueue(app, creationQueue);

  /** The request checked (the caller's supplier must be its own), or 400 with every error. */
  async function check(request: FastifyRequest, scheduling: boolean): Promise<CheckedRequest> {
    const supplier = await request.tenant.findSupplier(supplierCodeOf(request.body));
    const context = validationContext(app, supplier);
    const checked = checkRequest({ body: request.body, supplier, context, now: app.clock(), scheduling });
    if (checked.ok) return checked.request;
    if (!scheduling) throw new ApiError('account_failed_validation', { errors: checked.errors });
    throw new ApiError('import_process_failed_validation', {
      errors: checked.errors,
      fields: { domain: 'import_process' },
    });
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
      const checked = await check(request, true);
      const outcome = await scheduleCreation({ storage: app.storage, tasks, clock: app.clock }, checked);
      return answerSchedule(reply, outcome);
    },
  );

  await app.register(v2ImportProcessRoutes, { tasks, creationQueue });
}

const errorDetail = {
  operations_team_should_be_provided:
    'Name an operations team in the payload, or set a default team for the import supplier.',
  operations_team_name_does_not_exist: 'The operations team does not exist.',
} as const;

/** The creation queue as a schedule's task queue: a delayed job per task; unreachable Redis is a 503. */
function taskQueue(app: FastifyInstance, creationQueue: () => Queue): TaskQueue {
  const slots = new CreationSlots(app.redis, app.config);
  return {
    async add(processId, taskId, delayMs, hints) {
      const spec = jobCatalog['run-import-task'];
      try {
        // Due tasks start in turn by organisation (their priority), not in the order they were scheduled.
        const priority = await slots.taskPriority(hints.organisationId ?? '');
        await creationQueue().add(
          'run-import-task',
          { processId, taskId, ...hints, requestId: 'schedule' },
          { ...spec.options, ...retention, jobId: taskJobId(processId, taskId), delay: delayMs, priority },
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
}

/** A schedule's outcome as its HTTP answer (201, or the documented refusal). */
function answerSchedule(reply: FastifyReply, outcome: ScheduledCreationOutcome) {
  switch (outcome.status) {
    case 'scheduled':
      return reply.code(201).send(undefined as never);
    case 'refused':
      throw new ApiError(outcome.refusal.code, { detail: outcome.refusal.detail });
    case 'operations_team_should_be_provided':
    case 'operations_team_name_does_not_exist':
      throw new ApiError(outcome.status, {
        errors: [{ code: outcome.status, attr: 'operations_team_name', detail: errorDetail[outcome.status] }],
      });
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
}
