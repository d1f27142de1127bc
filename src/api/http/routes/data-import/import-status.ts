import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CreationSlots } from '../../../../use-cases/creation/slots.js';
import { processKey } from '../../../../storage/processes/process-key.js';
import { formatUtcDatetime } from '../../../../schemas/primitives.js';
import { ApiError } from '../../errors.js';
import { PENDING_JOB_STATES } from '../../../../use-cases/creation/create-request.js';
import type { ProcessListKind } from '../../../../storage/processes/import-processes.js';
import { commonErrors, errorResponses } from '../../schemas.js';
import { pathIdentifier } from '../../../../schemas/primitives.js';

const supplierParams = z.object({ code: pathIdentifier(64) });
// Optional keyset pagination (off unless `limit` is given): items after `after`, in the list's order.
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
  after: z.string().min(1).max(128).optional(),
});
const statusParams = supplierParams.extend({ external: pathIdentifier(128) });

const listItem = z.object({
  external_account_number: z.string(),
  kraken_account_number: z.string().nullable(),
  account_created_at: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ'),
});
const statusBody = z.object({
  status: z.enum(['UNKNOWN', 'COMPLETED', 'IN_PROGRESS']),
  kraken_account_number: z.string(),
});

export default async function importStatusRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const slots = new CreationSlots(app.redis, app.config);

  /** Queued or running: the account holds a creation slot, or its latest create job has not finished. */
  async function creationRunning(member: string, jobId: string | null | undefined): Promise<boolean> {
    // Reads keep working while Redis is down; the status then falls back to what the database knows.
    // silent-ok: Redis down is reported by /readyz; the answer falls back to the database's view
    if (await slots.isHeld(member).catch(() => false)) return true;
    if (!jobId) return false;
    const state = await app.queues
      .queue('account-creation')
      .getJobState(jobId)
      .catch(() => 'unknown');
    return PENDING_JOB_STATES.has(state);
  }

  app.get(
    '/account-transfer-status/:code/:external/',
    {
      schema: {
        tags: ['status'],
        operationId: 'getAccountImportStatus',
        summary: 'Import status of one account',
        description:
          'COMPLETED with the platform number once created; IN_PROGRESS while a create job is queued or running; ' +
          'UNKNOWN otherwise (staged, never created or the last attempt failed). kraken_account_number is "" until created.',
        params: statusParams,
        response: {
          200: statusBody.describe('The status.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'request_failed_validation: a path parameter is longer than allowed or holds a control character (invalid_character).',
            404: 'import_process_not_found (nothing staged for this account) or import_supplier_not_found.',
          }),
        },
      },
    },
    async (request) => {
      const supplier = await request.tenant.getSupplier(request.params.code);
      const process = await app.storage.processes.find(processKey(supplier.code, request.params.external));
      if (!process || (!process.stagedAt && !process.krakenAccountNumber))
        throw new ApiError('import_process_not_found');
      if (process.krakenAccountNumber)
        return { status: 'COMPLETED' as const, kraken_account_number: process.krakenAccountNumber };
      // The process key is also the account's slot member.
      if (await creationRunning(process._id, process.creationJobId))
        return { status: 'IN_PROGRESS' as const, kraken_account_number: '' };
      return { status: 'UNKNOWN' as const, kraken_account_number: '' };
    },
  );

  const list = (kind: ProcessListKind, operationId: string, summary: string) =>
    app.get(
      `/${kind}-account-import-processes/:code/`,
      {
        schema: {
          tags: ['status'],
          operationId,
          summary,
          description:
            'A bare JSON array sorted by external_account_number, streamed; skipped accounts are not listed. ' +
            'Optional keyset pagination: `limit` items after `after` (an external_account_number).',
          params: supplierParams,
          querystring: listQuery,
          response: {
            200: z.array(listItem).describe('The accounts; [] when the supplier has none.'),
            ...errorResponses([400, 404, ...commonErrors], {
              400: 'request_failed_validation: a bad limit or after, or a bad path parameter.',
              404: 'import_supplier_not_found: the caller has no import supplier with this code.',
            }),
          },
        },
      },
      async (request, reply) => {
        const supplier = await request.tenant.getSupplier(request.params.code);
        const cursor = app.storage.processes.list(supplier.code, kind, request.query);
        // Streamed item by item so memory stays flat however long the cohort is.
        async function* body() {
          let first = true;
          yield '[';
          for await (const doc of cursor) {
            const item = {
              external_account_number: doc.externalAccountNumber,
              kraken_account_number: kind === 'pending' ? null : (doc.krakenAccountNumber ?? null),
              account_created_at:
                kind !== 'pending' && doc.accountCreatedAt ? formatUtcDatetime(doc.accountCreatedAt) : null,
            };
            yield (first ? '' : ',') + JSON.stringify(item);
            first = false;
          }
          yield ']';
        }
        reply.type('application/json; charset=utf-8');
        // The stream is the array the schema documents, written incrementally.
        return reply.send(Readable.from(body()) as never);
      },
    );

  list(
    'all',
    'listAllAccountImportProcesses',
    'All account imports (pending and imported) of an import supplier',
  );
  list('pending', 'listPendingAccountImportProcesses', 'Staged accounts not yet created');
  list('imported', 'listImportedAccountImportProcesses', 'Accounts created');
}
