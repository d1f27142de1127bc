import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Queue } from 'bullmq';
import { z } from 'zod';
import { cancelTask, taskJobId, type TaskQueue } from '../../../../use-cases/creation/schedule.js';
import { processStatuses, type ProcessState } from '../../../../domain/import-process/state.js';
import { formatUtcDatetime, pathIdentifier } from '../../../../schemas/primitives.js';
import type { ProcessRow } from '../../../../storage/processes/import-processes.js';
import { describeEvent } from '../../../../storage/processes/process-event-records.js';
import { processKey } from '../../../../storage/processes/process-key.js';
import { relayEvents } from '../../../../use-cases/webhooks/relay.js';
import { ApiError } from '../../errors.js';
import { commonErrors, errorResponses } from '../../schemas.js';

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

export type ImportProcessRoutesOptions = {
  /** The creation tasks of the v2 schedule (see ./accounts.ts): cancel removes one, a status read requeues one. */
  tasks: TaskQueue;
  creationQueue: () => Queue;
};

/**
 * An account's v2 import process: its status, its event history, and cancelling its scheduled creation.
 * Registered by the v2 account routes (./accounts.ts), after validate and schedule, with their task queue.
 */
export default async function v2ImportProcessRoutes(
  fastify: FastifyInstance,
  { tasks, creationQueue }: ImportProcessRoutesOptions,
): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { storage } = app;

  /** The caller's import process, or 404 `not_found` (another organisation's is none). */
  async function processOf(request: FastifyRequest, code: string, external: string) {
    const supplier = await request.tenant.findSupplier(code);
    const process = supplier ? await storage.processes.find(processKey(supplier.code, external)) : null;
    if (!process || (!process.stagedAt && !process.krakenAccountNumber)) throw new ApiError('not_found');
    return process;
  }

  /**
   * A task the process still waits for whose job is gone from the queue (a Redis Cluster failover loses what
   * the old master had not replicated) gets its job again, due at its window's start: whoever follows the
   * task's status (the migration client polls it) brings it back. Best effort; Redis down changes nothing.
   */
  async function requeueLostTask(
    processId: string,
    organisationId: string,
    state: ProcessState,
  ): Promise<void> {
    if (state.status !== 'PENDING' || !state.task) return;
    const id = taskJobId(processId, state.task.id);
    try {
      if ((await creationQueue().getJobState(id)) !== 'unknown') return;
      // What the history held before the task is not known here, so the task reads all of it.
      await tasks.add(
        processId,
        state.task.id,
        Math.max(0, Date.parse(state.task.windowStart) - app.clock().getTime()),
        {
          organisationId,
          windowStart: Date.parse(state.task.windowStart),
          windowEnd: Date.parse(state.task.windowEnd),
        },
      );
      app.log.warn({ job_id: id }, 'scheduled task had no job (lost in a Redis failover?): queued again');
    } catch {
      // silent-ok: Redis unavailable; the next status read tries again.
    }
  }

  /** The status body of a process: its history's state, or (no history) what its v1 state tells. */
  async function statusOf(process: ProcessRow, options: { repair?: boolean } = {}) {
    const state = await storage.events.state(process._id);
    if (options.repair) await requeueLostTask(process._id, String(process.organisationId), state);
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
      return (await storage.events.history(process._id)).map(describeEvent);
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
        storage,
        tasks,
        process.importSupplier,
        process.externalAccountNumber,
        app.clock(),
      );
      if (outcome.status === 'not_found') throw new ApiError('not_found');
      if (outcome.status === 'not_cancellable') throw new ApiError('import_process_not_cancellable');
      await relayEvents(app.queues.queue('webhooks'), [outcome.recorded], request.id, {
        store: storage.webhooks,
        dispatch: app.webhooks,
      });
      return statusOf(process);
    },
  );
}
