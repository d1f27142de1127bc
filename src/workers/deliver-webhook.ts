import { DelayedError, type Job } from 'bullmq';
import { deliveryJobId, type JobData } from '../jobs/catalog.js';
import { deliverWebhook } from '../use-cases/webhooks/deliver.js';
import type { WorkerContext } from './context.js';

/**
 * The delivery job: one run of a delivery (`deliverWebhook`). A delivery to be run again (its endpoint busy, its
 * next attempt due later) waits as this job, delayed; from its first recorded attempt on, the job reads the
 * delivery's record rather than what its dispatch wrote of it.
 */
export async function deliverWebhookJob(
  data: JobData<'deliver-webhook'>,
  job: Job,
  ctx: WorkerContext,
): Promise<{ status: string; attempts?: number }> {
  const { config, log, clock } = ctx;
  const { fleet, places } = ctx.webhooks;
  const deps = { config, log, clock, store: ctx.storage.webhooks, fleet, places };
  const run = {
    deliveryId: data.deliveryId,
    fresh: data.fresh,
    series: seriesOfJob(job.id, data.deliveryId),
  };
  const outcome = await deliverWebhook(deps, run);
  if (!('waitUntil' in outcome)) return outcome;
  if (outcome.fromRecord && data.fresh)
    await job.updateData({ deliveryId: data.deliveryId, requestId: data.requestId });
  await job.moveToDelayed(outcome.waitUntil, job.token);
  throw new DelayedError();
}

/** The series a delivery job is for, from its id (`deliveryJobId`); null for an id not made so. */
function seriesOfJob(jobId: string | undefined, delivery: string): number | null {
  const first = deliveryJobId(delivery);
  if (jobId === first) return 0;
  const replay = jobId?.startsWith(`${first}-`) ? Number(jobId.slice(jobId.lastIndexOf('-') + 1)) : NaN;
  return Number.isInteger(replay) && deliveryJobId(delivery, replay) === jobId ? replay : null;
}
