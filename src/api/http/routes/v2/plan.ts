import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pauseBodySchema, planBodySchema } from '../../../../domain/cutover/plan.js';
import { issuesToFieldErrors } from '../../../../domain/validation/zod-issues.js';
import { pathIdentifier } from '../../../../schemas/primitives.js';
import { PlanGate } from '../../../../use-cases/cutover/plan-gate.js';
import {
  declarePlan,
  describePlan,
  pausePlan,
  readPlan,
  resumePlan,
  type PlanDeps,
} from '../../../../use-cases/cutover/plan.js';
import { relayEvents } from '../../../../use-cases/webhooks/relay.js';
import { withExample } from '../../../openapi/examples.js';
import { ApiError } from '../../errors.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

const supplierParams = z.object({ import_supplier_code: pathIdentifier(64) });

const codes = z.array(z.object({ code: z.string(), count: z.number().int() }));
export const pauseBody = z
  .object({
    reason: z.enum(['canary', 'breaker', 'operator']),
    detail: z.string().describe('Why, for people (an operator’s own reason when given).'),
    since: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ'),
    codes: codes.describe(
      'The breaker’s: the failing codes among the last accounts, with counts (never values).',
    ),
  })
  .describe('Why the cohort is paused; null while it is not.');

const planAnswer = z.object({
  import_supplier_code: z.string(),
  expected_accounts: z.number().int(),
  schedule_window_start: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ, or null: no window.'),
  schedule_window_end: z.string().nullable().describe('YYYY-MM-DDTHH:MM:SSZ, or null: no window.'),
  canary_accounts: z.number().int().nullable(),
  breaker: z.object({ error_percent: z.number(), over_accounts: z.number().int() }).nullable(),
  status: z.enum(['ACTIVE', 'PAUSED']),
  pause: pauseBody.nullable(),
  canary_approved: z.boolean().describe('The canary was approved (resumed): it pauses no more.'),
  counts: z
    .object({ processed: z.number().int(), errored: z.number().int(), in_flight: z.number().int() })
    .describe('The creations the plan admitted: PROCESSED, errored, and started but not finished.'),
  updated_at: z.string().describe('When the plan was last declared, YYYY-MM-DDTHH:MM:SSZ.'),
});

/** The guide's requests (docs/api.md, Cohort plan), in the OpenAPI document too. */
const planExample = {
  expected_accounts: 2000,
  schedule_window_start: null,
  schedule_window_end: null,
  canary_accounts: 50,
  breaker: { error_percent: 5, over_accounts: 200 },
};
const pauseExample = { reason: 'Waiting for the billing freeze' };

const notFound = {
  404: 'import_supplier_not_found: no such supplier for this organisation; not_found: it has no plan.',
};

/** A supplier's cohort plan (issue 47): declare it, read it, pause and resume its cohort. */
export default async function v2PlanRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const deps: PlanDeps = {
    storage: app.storage,
    gate: new PlanGate(app.redis, app.config.QUEUE_PREFIX),
    clock: app.clock,
    relay: (events, requestId) =>
      relayEvents(app.queues.queue('webhooks'), events, requestId, {
        store: app.storage.webhooks,
        dispatch: app.webhooks,
      }),
  };
  async function supplierOf(request: FastifyRequest, code: string) {
    const supplier = await request.tenant.findSupplier(code);
    if (!supplier) throw new ApiError('import_supplier_not_found');
    return supplier;
  }
  const noPlan = () => new ApiError('not_found', { detail: 'The import supplier has no cohort plan.' });
  const path = '/import-suppliers/:import_supplier_code/plan/';

  app.put(
    path,
    {
      schema: {
        tags: ['v2'],
        operationId: 'putCohortPlan',
        summary: 'Declare or update the supplier’s cohort plan (one per supplier; a rerun updates it)',
        description:
          '`expected_accounts` (required, ≥ 1), the window (`schedule_window_start`/`_end`, the v2 schedule ' +
          'rules and codes), `canary_accounts` (pause after the first N PROCESSED), `breaker` (pause when more ' +
          'than `error_percent` % of the last `over_accounts` finished accounts errored). 400 ' +
          '`request_failed_validation` with every error at its path.',
        params: supplierParams,
        body: withExample(
          planBodySchema,
          'A cohort of 2,000: a canary of 50, a breaker of 5 % over 200',
          planExample,
        ),
        response: {
          200: planAnswer.describe('The plan as declared, and its state.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const declared = await declarePlan(deps, supplier, request.body);
      if (!declared.ok) throw new ApiError('request_failed_validation', { errors: declared.errors });
      return declared.plan;
    },
  );

  app.get(
    path,
    {
      schema: {
        tags: ['v2'],
        operationId: 'getCohortPlan',
        summary: 'The supplier’s cohort plan and its state (paused or not, why, the counts)',
        params: supplierParams,
        response: {
          200: planAnswer.describe('The plan.'),
          ...errorResponses([400, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const read = await readPlan(deps, supplier.code);
      if (!read) throw noPlan();
      return describePlan(read.plan, read.state);
    },
  );

  app.post(
    `${path}pause/`,
    {
      schema: {
        tags: ['v2'],
        operationId: 'pauseCohortPlan',
        summary: 'Pause the cohort (an operator’s pause; `reason` optional, at most 200 characters)',
        description:
          'v2 tasks of the supplier wait (their windows still theirs), v1 creates answer 400 ' +
          '`import_supplier_migration_not_ongoing`; creations already started finish. A cohort paused already ' +
          'stays paused as it is.',
        params: supplierParams,
        body: withExample(pauseBodySchema, 'An operator’s pause, with its reason', pauseExample),
        response: {
          200: planAnswer.describe('The plan, paused.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const parsed = pauseBodySchema.safeParse(request.body ?? {});
      if (!parsed.success)
        throw new ApiError('request_failed_validation', {
          errors: issuesToFieldErrors(parsed.error.issues, request.body),
        });
      const paused = await pausePlan(deps, supplier, parsed.data.reason ?? '', request.id);
      if (!paused) throw noPlan();
      return paused;
    },
  );

  app.post(
    `${path}resume/`,
    {
      schema: {
        tags: ['v2'],
        operationId: 'resumeCohortPlan',
        summary: 'Approve the canary, or resume after the breaker or an operator’s pause',
        description: 'Send `{}`. The cohort’s waiting tasks start again; each account is created once.',
        params: supplierParams,
        body: withExample(z.strictObject({}), 'Resume (or approve the canary)', {}),
        response: {
          200: planAnswer.describe('The plan, resumed.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], notFound),
        },
      },
    },
    async (request) => {
      const supplier = await supplierOf(request, request.params.import_supplier_code);
      const parsed = z.strictObject({}).safeParse(request.body ?? {});
      if (!parsed.success)
        throw new ApiError('request_failed_validation', {
          errors: issuesToFieldErrors(parsed.error.issues, request.body),
        });
      const resumed = await resumePlan(deps, supplier.code);
      if (!resumed) throw noPlan();
      return resumed;
    },
  );
}
