import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { processStatuses } from '../../../../domain/import-process/state.js';
import { pathIdentifier } from '../../../../schemas/primitives.js';
import { processKey } from '../../../../storage/processes/process-key.js';
import { CreationSlots } from '../../../../use-cases/creation/slots.js';
import { PlanGate } from '../../../../use-cases/cutover/plan-gate.js';
import { stepKinds } from '../../../../use-cases/timeline/steps.js';
import {
  decodeTimelineCursor,
  readTimeline,
  TIMELINE_BOUNDS,
  TIMELINE_PAGE_MAX,
} from '../../../../use-cases/timeline/timeline.js';
import { whyCodes, type CreationQueueView } from '../../../../use-cases/timeline/why.js';
import { ApiError } from '../../errors.js';
import { commonErrors, errorResponses } from '../../schemas.js';

const params = z.object({
  import_supplier_code: pathIdentifier(64),
  external_account_number: pathIdentifier(128),
});
const query = z.object({
  limit: z.coerce.number().int().min(1).max(TIMELINE_PAGE_MAX).optional(),
  cursor: z.string().max(512).optional(),
});

const stepBody = z.object({
  id: z.string().describe('Stable and unique within the account’s timeline.'),
  step: z.enum(stepKinds),
  at: z.string().describe('When it happened, YYYY-MM-DDTHH:MM:SSZ.'),
  duration_ms: z
    .number()
    .int()
    .nullable()
    .describe(
      'queued: until a worker started it (so far, while it waits); started: until its outcome (so far, while ' +
        'it runs); webhook: first attempt to the last, once settled; null for the others.',
    ),
  detail: z.string().describe('The step in words; wording may change.'),
  data: z
    .record(z.string(), z.unknown())
    .describe('The step’s facts (codes, paths, numbers, ids: never values of the payload).'),
});
const timelineBody = z.object({
  import_supplier_code: z.string(),
  external_account_number: z.string(),
  status: z.enum(processStatuses).describe('The v2 status, as the status endpoint answers it.'),
  as_of: z.string().describe('YYYY-MM-DDTHH:MM:SSZ'),
  steps: z.array(stepBody).describe('One page of steps, oldest first.'),
  next: z.string().nullable().describe('The cursor of the next page, null on the last one.'),
  truncated: z
    .boolean()
    .describe(
      `True when the account has more than the timeline reads (${TIMELINE_BOUNDS.events} history entries, ` +
        `${TIMELINE_BOUNDS.postImports} post-import writes, ${TIMELINE_BOUNDS.deliveries} webhook deliveries): ` +
        'the oldest are listed; `why` is always the current one.',
    ),
  why: z
    .object({
      code: z.enum(whyCodes),
      detail: z.string().describe('In words; wording may change.'),
      since: z.string().nullable().describe('Since when it is so, YYYY-MM-DDTHH:MM:SSZ (null: not known).'),
      data: z.record(z.string(), z.unknown()).describe('The facts behind it (see the guide for each code).'),
    })
    .describe('Why the account is where it is now.'),
});

/**
 * An account's timeline: every step of its migration and why it is where it is now (`use-cases/timeline/`).
 * Same authentication and tenancy as the rest of v2: another organisation's account is a 404 `not_found`.
 */
export default async function v2TimelineRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const slots = new CreationSlots(app.redis, app.config);
  const plans = new PlanGate(app.redis, app.config.QUEUE_PREFIX);
  const creation = () => app.queues.queue('account-creation');
  const queue: CreationQueueView = {
    jobState: (id) => creation().getJobState(id),
    workers: () => creation().getWorkersCount(),
  };

  app.get(
    '/accounts/:import_supplier_code/:external_account_number/timeline/',
    {
      schema: {
        tags: ['v2'],
        operationId: 'getAccountTimeline',
        summary: 'Every step of an account’s migration, in order, and why it is where it is now',
        description:
          'Stages and re-stages, schedules, queueing, the start (with its worker), the outcome (with its code ' +
          'and paths), each post-import write (its resource and count) and each webhook delivery (endpoint, ' +
          `attempts, status), oldest first, at most \`limit\` (1 to ${TIMELINE_PAGE_MAX}, default ` +
          `${TIMELINE_PAGE_MAX}) a page; \`cursor\` is the previous page’s \`next\`. \`why\` ends it: done, ` +
          'failed (code and paths), waiting for its window, its cohort paused (the reason), no worker ' +
          'consuming the creation queue (for how long), waiting for a creation slot (how many ahead), …',
        params,
        querystring: query,
        response: {
          200: timelineBody.describe('One page of the timeline.'),
          ...errorResponses([400, 404, ...commonErrors], {
            400: 'request_failed_validation: a bad `limit` or `cursor`, or a path parameter too long or holding a control character.',
            404: 'not_found: no import process for this account (or another organisation’s).',
          }),
        },
      },
    },
    async (request) => {
      const { import_supplier_code: code, external_account_number: external } = request.params;
      const supplier = await request.tenant.findSupplier(code);
      const process = supplier ? await app.storage.processes.find(processKey(supplier.code, external)) : null;
      if (!process || (!process.stagedAt && !process.krakenAccountNumber)) throw new ApiError('not_found');
      const { cursor, limit } = request.query;
      const after = cursor === undefined ? null : decodeTimelineCursor(cursor);
      if (cursor !== undefined && !after)
        throw new ApiError('request_failed_validation', {
          errors: [{ code: 'invalid', attr: 'cursor', detail: 'Not a cursor this endpoint answered.' }],
        });
      const deps = { storage: app.storage, slots, plans, queue, clock: app.clock };
      return readTimeline(deps, process, { limit: limit ?? TIMELINE_PAGE_MAX, after });
    },
  );
}
