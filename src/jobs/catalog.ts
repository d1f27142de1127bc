import type { JobsOptions } from 'bullmq';
import { z } from 'zod';

/**
 * Every job the service runs: its queue, its payload schema and default options. Job data holds ids and
 * flags only, never documents or personal data (it is stored in clear text in Redis).
 */
export const queueNames = [
  'account-creation',
  'payment-verification',
  'migration-email',
  'webhooks',
] as const;
export type QueueName = (typeof queueNames)[number];

const requestId = z.string().max(128);

export const jobCatalog = {
  'create-account': {
    queue: 'account-creation',
    data: z.object({
      processId: z.string(),
      operationsTeamId: z.string(),
      dryRun: z.boolean(),
      /** The account's create attempt the job is (part of its id); 0 for a dry run. */
      attempt: z.number().int().nonnegative().default(0),
      /** The organisation whose share of the creation limit the job uses (absent in jobs queued before it). */
      organisationId: z.string().optional(),
      requestId,
    }),
    options: { attempts: 5, backoff: { type: 'exponential', delay: 200 } },
  },
  /** A v2 scheduled creation: delayed until its window starts (see `workers/run-import-task.ts`). */
  'run-import-task': {
    queue: 'account-creation',
    data: z.object({
      processId: z.string(),
      /** The task: the history position of its SCHEDULED event. */
      taskId: z.number().int().nonnegative(),
      /**
       * The schedule found the history before the task fresh (`isFresh` in `domain/import-process/state.ts`):
       * the task then reads the history from its own entry on, not from the start. A flag, not the state
       * itself: the state may hold an error's text. Absent in jobs queued before it existed (read it all).
       */
      freshBefore: z.boolean().optional(),
      /** The organisation whose share of the creation limit the task uses (absent in jobs queued before it). */
      organisationId: z.string().optional(),
      /** When the task first waited in its organisation's line for a slot (ms): its place in that line. */
      parkedAt: z.number().optional(),
      /**
       * The task's window (ms), as scheduled: inside it the task asks for its slot before it reads its history,
       * so that a full limit costs a task no database read (absent in jobs queued before it).
       */
      windowStart: z.number().optional(),
      windowEnd: z.number().optional(),
      requestId,
    }),
    // Failures are retried by the task itself; a crash (stall) reruns it.
    options: { attempts: 5, backoff: { type: 'exponential', delay: 1_000 } },
  },
  /** Fans one recorded import event out to the organisation's webhook endpoints (see `src/use-cases/webhooks/`). */
  'dispatch-event': {
    queue: 'webhooks',
    data: z.object({ eventKey: z.string(), requestId }),
    options: { attempts: 10, backoff: { type: 'exponential', delay: 1_000 } },
  },
  /** One delivery of an event to one endpoint; retries are the delivery's own (see `webhooks/deliver.ts`). */
  'deliver-webhook': {
    queue: 'webhooks',
    data: z.object({
      deliveryId: z.string(),
      requestId,
      /**
       * What the delivery holds, given by the dispatch that inserted it (pending, no attempt yet), so that its
       * first run need not read it. Dropped once an attempt is recorded; absent for replays and the sweep's.
       */
      fresh: z.object({ endpointId: z.string(), eventKey: z.string(), type: z.string() }).optional(),
    }),
    options: { attempts: 3, backoff: { type: 'exponential', delay: 1_000 } },
  },
  /** The outbox sweep (a job scheduler on the webhook queue). */
  'sweep-outbox': {
    queue: 'webhooks',
    data: z.object({ requestId }),
    options: { attempts: 1 },
  },
  'verify-payment-instruction': {
    queue: 'payment-verification',
    data: z.object({
      accountId: z.string(),
      vendor: z.string(),
      reference: z.string(),
      type: z.string(),
      requestId,
    }),
    options: { attempts: 1 },
  },
  'send-migration-email': {
    queue: 'migration-email',
    data: z.object({ accountId: z.string(), requestId }),
    options: { attempts: 8, backoff: { type: 'exponential', delay: 1_000 } },
  },
} as const satisfies Record<string, { queue: QueueName; data: z.ZodType; options: JobsOptions }>;

export type JobName = keyof typeof jobCatalog;
export type JobData<N extends JobName> = z.infer<(typeof jobCatalog)[N]['data']>;

/** Kept by count and age, never removed on completion: a waiting producer must still find the result. */
export const retention: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> = {
  removeOnComplete: { age: 24 * 3600, count: 50_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 50_000 },
};

/** BullMQ job ids must not contain ':'; ours are built from ids that never do, joined with '-'. */
export function jobId(...parts: string[]): string {
  return parts.map((p) => p.replaceAll(':', '_')).join('-');
}

/** A webhook delivery's job id (a replay adds its number, so it runs even after the first job finished). */
export const deliveryJobId = (delivery: string, replay = 0) =>
  replay === 0 ? jobId('deliver', delivery) : jobId('deliver', delivery, 'replay', String(replay));

/** A webhook delivery job's options: the catalog's, the retention and its job id (see `deliveryJobId`). */
export const deliveryJobOptions = (delivery: string, replay = 0): JobsOptions => ({
  ...jobCatalog['deliver-webhook'].options,
  ...retention,
  jobId: deliveryJobId(delivery, replay),
});
