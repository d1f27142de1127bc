import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { processStatuses } from '../../../../domain/import-process/state.js';
import {
  decodeCursor,
  drillStatuses,
  listAccounts,
  postImportResources,
  readProgress,
  readSummaries,
  readTimeline,
  TIMELINE_MAX_MINUTES,
  type DrillStatus,
} from '../../../../use-cases/progress/cohort.js';
import { formatUtcDatetime, pathIdentifier } from '../../../../schemas/primitives.js';
import { isCounted, type CountedStorage } from '../../../../use-cases/progress/rebuild.js';
import { CreationSlots } from '../../../../use-cases/creation/slots.js';
import { PlanGate } from '../../../../use-cases/cutover/plan-gate.js';
import { planProgress } from '../../../../use-cases/cutover/plan.js';
import { pauseBody } from './plan.js';
import { ApiError } from '../../errors.js';
import { commonErrors, errorResponses } from '../../schemas.js';

const supplierParams = z.object({ import_supplier_code: pathIdentifier(64) });
const accountsQuery = z.object({
  status: z.string().optional(),
  code: z.string().max(128).optional(),
  cursor: z.string().max(512).optional(),
});

const minutesQuery = z.object({
  minutes: z.coerce.number().int().min(1).max(TIMELINE_MAX_MINUTES).optional(),
});

const errorOfProcess = z.object({ code: z.string(), detail: z.string(), domain: z.string() });
export const progressBody = z.object({
  import_supplier_code: z.string(),
  status: z.string().describe('The supplier’s migration status (Ongoing, …).'),
  as_of: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
  rebuilding: z
    .boolean()
    .describe(
      'True while the counts are being rebuilt from the database (after Redis lost what it held, or a ' +
        'change could not be counted): the figures are not settled yet. They come back by themselves.',
    ),
  accounts: z
    .object({
      total: z.number().int(),
      ...Object.fromEntries(processStatuses.map((s) => [s, z.number().int()])),
    })
    .describe('Every import process of the supplier by its v2 status; total is their sum.'),
  skipped: z.number().int().describe('Accounts an operator marked skipped (not in total).'),
  processed_per_minute: z.object({ last_1m: z.number(), last_5m: z.number(), last_15m: z.number() }),
  eta_seconds: z
    .number()
    .int()
    .nullable()
    .describe('(PENDING + IN_PROGRESS) / the 5-minute rate; null at 0.'),
  failures: z
    .array(
      z.object({
        code: z.string(),
        count: z.number().int(),
        attrs: z.array(z.object({ attr: z.string(), count: z.number().int() })),
      }),
    )
    .describe(
      'ERRORED and DRY_RUN_ERRORED accounts by latest_error.code, largest first (20 codes, 5 paths).',
    ),
  post_import: z.object(Object.fromEntries(postImportResources.map((r) => [r, z.number().int()]))),
  creation_slots: z
    .object({
      in_use: z.number().int().describe('Slots the organisation’s creations hold now.'),
      share: z
        .number()
        .describe(
          'The organisation’s fair share of the limit now: the limit times its weight over the weights of ' +
            'the organisations holding or waiting for a slot (the whole limit when alone).',
        ),
      limit: z.number().int().describe('The global creation limit (0: none).'),
      waiting: z.number().int().describe('The organisation’s creations waiting for a slot.'),
    })
    .describe(
      'The creation limit as the supplier’s organisation uses it now (its suppliers share these slots).',
    ),
  plan: z
    .object({
      expected_accounts: z.number().int(),
      done: z.number().int().describe('Accounts whose creation finished (PROCESSED, ERRORED, DRY_RUN_*).'),
      percent_done: z.number().describe('done over expected_accounts, in %, one decimal (at most 100).'),
      projected_finish: z
        .string()
        .nullable()
        .describe('YYYY-MM-DDTHH:MM:SSZ: the remaining accounts at the last 5 minutes’ rate; null at 0.'),
      schedule_window_end: z.string().nullable(),
      finishes_in_window: z
        .boolean()
        .nullable()
        .describe('Whether the projection ends before the window does; null without either.'),
      pause: pauseBody.nullable(),
    })
    .nullable()
    .describe('The supplier’s cohort plan (PUT …/plan/), null without one.'),
});
const suppliersBody = z.object({
  results: z
    .array(
      progressBody
        .pick({
          import_supplier_code: true,
          status: true,
          as_of: true,
          rebuilding: true,
          accounts: true,
          skipped: true,
          processed_per_minute: true,
          eta_seconds: true,
          creation_slots: true,
        })
        .describe('One supplier’s progress summary (the progress body without failures and post_import).'),
    )
    .describe('Every supplier of the caller’s organisation, by code.'),
});
const minutesBody = z.object({
  import_supplier_code: z.string(),
  as_of: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
  minutes: z
    .array(
      z.object({
        minute: z.string().describe('The minute’s start, YYYY-MM-DDTHH:MM:SSZ.'),
        processed: z.number().int().describe('Accounts that reached PROCESSED in that minute.'),
        errored: z
          .number()
          .int()
          .describe('Accounts that reached ERRORED or DRY_RUN_ERRORED in that minute.'),
      }),
    )
    .describe('One entry per minute, oldest first; the last is the current minute so far.'),
});
const accountsBody = z.object({
  results: z.array(
    z.object({
      external_account_number: z.string(),
      status: z.string(),
      kraken_identifier: z.string().nullable(),
      latest_error: errorOfProcess.nullable(),
      error_paths: z.array(z.string()).describe('The paths of a validation failure (codes and paths only).'),
      modified_at: z.string(),
    }),
  ),
  next: z.string().nullable().describe('The cursor of the next page, null on the last one.'),
});
const notFound = { 404: 'import_supplier_not_found: no such supplier for this organisation.' };

/** Cohort progress: the counts, and the drill-down to the accounts behind them. */
export default async function v2ProgressRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  async function supplierOf(request: FastifyRequest, code: string) {
    const supplier = await request.tenant.findSupplier(code);
    if (!supplier) throw new ApiError('import_supplier_not_found');
    return supplier;
  }
  /** The storage with its progress counters (none without Redis: then the counts cannot be read). */
  const counted = (): CountedStorage => {
    const { storage } = app;
    if (!isCounted(storage)) throw new ApiError('service_unavailable');
    return storage;
  };
  const slots = new CreationSlots(app.redis, app.config);
  const plans = new PlanGate(app.redis, app.config.QUEUE_PREFIX);
  /** The organisation's part of the creation limit now (`creation_slots`). */
  async function slotsOf(organisationId: string) {
    const use = await slots.usage(organisationId);
    return {
      in_use: use.inUse,
      share: Math.round(use.share * 100) / 100,
      limit: slots.limit,
      waiting: use.waiting,
    };
  }
  /** Redis unreachable: the counts live there. */
  const unavailable = (err: unknown): never => {
    if (err instanceof ApiError) throw err;
    throw new ApiError('service_unavailable', { headers: { 'retry-after': '5' } });
  };

  app.get(
    '/import-suppliers/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'listImportSuppliers',
        summary: 'Every supplier of the caller’s organisation with its progress summary',
        description:
          'The counts by status, rate and ETA of each supplier (as in its progress body), by code: the same ' +
          'cost per supplier whatever its cohort’s size.',
        response: {
          200: suppliersBody.describe('The suppliers.'),
          ...errorResponses([...commonErrors]),
        },
      },
    },
    async (request) => {
      const suppliers = await request.tenant.listSuppliers();
      const [summaries, creation] = await Promise.all([
        readSummaries(counted(), suppliers, app.clock()),
        slotsOf(request.tenant.organisationId),
      ]).catch(unavailable);
      return { results: summaries.map((summary) => ({ ...summary, creation_slots: creation })) };
    },
  );

  app.get(
    '/import-suppliers/:import_supplier_code/progress/minutes/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'getCohortProgressPerMinute',
        summary: 'Accounts processed and errored per minute over the last hour (or `minutes`)',
        description:
          '`minutes`: how many minutes back, 1 to 60 (default 60), the current one included. Read from the ' +
          'same counters as the progress body.',
        params: supplierParams,
        querystring: minutesQuery,
        response: {
          200: minutesBody.describe('The minutes.'),
          ...errorResponses([400, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const now = app.clock();
      const minutes = await readTimeline(
        counted().progress,
        supplier.code,
        now,
        request.query.minutes ?? TIMELINE_MAX_MINUTES,
      ).catch(unavailable);
      return { import_supplier_code: supplier.code, as_of: formatUtcDatetime(now), minutes };
    },
  );

  app.get(
    '/import-suppliers/:import_supplier_code/progress/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'getCohortProgress',
        summary: 'A supplier’s cohort progress: counts by status, rate, ETA, failures, post-import items',
        description:
          'Read from counters that every state change maintains: the same cost for 100 and for 1,000,000 ' +
          'accounts, at most about 2 seconds behind the changes, exact once nothing moves.',
        params: supplierParams,
        response: {
          200: progressBody.describe('The progress.'),
          ...errorResponses([400, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const now = app.clock();
      const [progress, creation, plan] = await Promise.all([
        readProgress(counted(), supplier, now),
        slotsOf(request.tenant.organisationId),
        planProgress({ storage: app.storage, gate: plans }, supplier.code, now),
      ]).catch(unavailable);
      return { ...progress, creation_slots: creation, plan };
    },
  );

  app.get(
    '/import-suppliers/:import_supplier_code/accounts/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'listCohortAccounts',
        summary: 'The accounts behind a progress count, oldest change first (keyset pages of 100)',
        description:
          '`status`: a v2 status or SKIPPED (required); `code`: the latest_error.code of ERRORED and ' +
          'DRY_RUN_ERRORED accounts; `cursor`: the previous page’s `next`. 400 with `attr` `status` or `cursor`.',
        params: supplierParams,
        querystring: accountsQuery,
        response: {
          200: accountsBody.describe('One page.'),
          ...errorResponses([400, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const { status, code, cursor } = request.query;
      if (!status || !(drillStatuses as readonly string[]).includes(status)) {
        throw new ApiError('request_failed_validation', {
          errors: [
            {
              code: status ? 'invalid_choice' : 'required',
              attr: 'status',
              detail: `One of ${drillStatuses.join(', ')}.`,
            },
          ],
        });
      }
      const after = cursor === undefined ? null : decodeCursor(cursor);
      if (cursor !== undefined && !after) {
        throw new ApiError('request_failed_validation', {
          errors: [{ code: 'invalid', attr: 'cursor', detail: 'Not a cursor this endpoint answered.' }],
        });
      }
      return listAccounts(counted().progress, supplier.code, {
        status: status as DrillStatus,
        code,
        after,
      }).catch(unavailable);
    },
  );
}
