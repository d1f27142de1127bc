import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError } from '../../errors.js';

const supplierParams = z.object({ code: z.string().min(1).max(64) });
const statusParams = supplierParams.extend({ external: z.string().min(1).max(128) });

const listItem = z.object({
  external_account_number: z.string(),
  kraken_account_number: z.string().nullable(),
  account_created_at: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ'),
});
const statusBody = z.object({
  status: z.enum(['UNKNOWN', 'COMPLETED', 'IN_PROGRESS']),
  kraken_account_number: z.string(),
});

type ListKind = 'all' | 'pending' | 'imported';

/** ISO 8601 with second precision and a Z, as the interface's datetime format. */
export function formatDateTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export default async function importStatusRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/account-transfer-status/:code/:external/',
    {
      schema: {
        tags: ['status'],
        summary: 'Import status of one account',
        params: statusParams,
        response: { 200: statusBody },
      },
    },
    async (request) => {
      const supplier = await request.tenant.getSupplier(request.params.code);
      const process = await app.db.models.AccountImportProcess.findOne({
        importSupplier: supplier.code,
        externalAccountNumber: request.params.external,
      }).lean();
      if (!process || (!process.stagedPayload && !process.krakenAccountNumber))
        throw new ApiError('import_process_not_found');
      if (process.krakenAccountNumber)
        return { status: 'COMPLETED' as const, kraken_account_number: process.krakenAccountNumber };
      return { status: 'UNKNOWN' as const, kraken_account_number: '' };
    },
  );

  const list = (kind: ListKind, summary: string) =>
    app.get(
      `/${kind}-account-import-processes/:code/`,
      { schema: { tags: ['status'], summary, params: supplierParams, response: { 200: z.array(listItem) } } },
      async (request, reply) => {
        const supplier = await request.tenant.getSupplier(request.params.code);
        const filter: Record<string, unknown> = { importSupplier: supplier.code, skipped: { $ne: true } };
        if (kind === 'pending')
          Object.assign(filter, { krakenAccountNumber: null, stagedPayload: { $ne: null } });
        else if (kind === 'imported') filter.krakenAccountNumber = { $ne: null };
        else filter.$or = [{ krakenAccountNumber: { $ne: null } }, { stagedPayload: { $ne: null } }];
        const cursor = app.db.models.AccountImportProcess.find(filter)
          .select({ externalAccountNumber: 1, krakenAccountNumber: 1, accountCreatedAt: 1, _id: 0 })
          .sort({ externalAccountNumber: 1 })
          .lean()
          .cursor({ batchSize: 1000 });
        // Streamed item by item so memory stays flat however long the cohort is.
        async function* body() {
          let first = true;
          yield '[';
          for await (const doc of cursor) {
            const item = {
              external_account_number: doc.externalAccountNumber,
              kraken_account_number: kind === 'pending' ? null : (doc.krakenAccountNumber ?? null),
              account_created_at:
                kind !== 'pending' && doc.accountCreatedAt ? formatDateTime(doc.accountCreatedAt) : null,
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

  list('all', 'All account imports (pending and imported) of an import supplier');
  list('pending', 'Staged accounts not yet created');
  list('imported', 'Accounts created');
}
