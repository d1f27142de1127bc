import { DelayedError, type Job } from 'bullmq';
import { Types } from 'mongoose';
import type { CreationOutcome } from '../use-cases/creation/from-process.js';
import { PlanGate } from '../use-cases/cutover/plan-gate.js';
import { checkPlanRisks, publishPause, type PlanDeps } from '../use-cases/cutover/plan.js';
import { creationOutcomeOf } from '../use-cases/creation/plan-admission.js';
import { relayEvents } from '../use-cases/webhooks/relay.js';
import type { WorkerContext } from './context.js';

/**
 * The workers' side of the cohort plans (issue 47): a v2 task is admitted by its supplier's plan before it
 * creates (held back, it waits in the delayed set: never failed for it, its window still its own), every
 * creation is settled with the plan when it ends (a pause it causes is published as `cohort.paused-v1`), and
 * each worker process projects the plans with a window every COHORT_PLAN_CHECK_INTERVAL_MS.
 */

function planDeps(ctx: Omit<WorkerContext, 'jobRedis'>): PlanDeps {
  return {
    storage: ctx.storage,
    gate: new PlanGate(ctx.redis, ctx.config.QUEUE_PREFIX),
    clock: ctx.clock,
    relay: (events, requestId) =>
      relayEvents(ctx.queue('webhooks'), events, requestId, {
        store: ctx.storage.webhooks,
        dispatch: ctx.webhooks,
      }),
  };
}

/**
 * Admits a task's creation (its slot held): held back, the job sleeps until the plan's window opens or, paused
 * or at its canary, for the check interval, never past its own window's end (the next run then records the
 * expiry, as a task that found no slot).
 */
export async function admitTask(ctx: WorkerContext, job: Job, member: string, windowEnd: number) {
  const admission = await new PlanGate(ctx.redis, ctx.config.QUEUE_PREFIX).admit(member);
  if (admission.admitted) return;
  const now = Date.now();
  const again =
    admission.reason === 'before_window'
      ? admission.startsAt
      : now + ctx.config.COHORT_PLAN_CHECK_INTERVAL_MS;
  await job.moveToDelayed(Math.max(now + 1, Math.min(again, windowEnd + 1)), job.token);
  throw new DelayedError();
}

/** Settles a finished creation with its plan; a pause it causes is published. Best effort (logged). */
export async function settleCreation(
  ctx: WorkerContext,
  member: string,
  organisationId: string | undefined,
  outcome: CreationOutcome | 'failed',
  requestId: string,
): Promise<void> {
  try {
    const deps = planDeps(ctx);
    const [kind, code] = creationOutcomeOf(outcome);
    const pause = await deps.gate.settle(member, kind, code);
    if (!pause || !organisationId) return;
    const supplier = {
      code: member.slice(0, member.indexOf('/')),
      organisationId: new Types.ObjectId(organisationId),
    };
    await publishPause(deps, supplier, pause, requestId);
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'could not settle a creation with its cohort plan');
  }
}

/** Every COHORT_PLAN_CHECK_INTERVAL_MS, the plans with a window are projected (`checkPlanRisks`). */
export function startPlanChecks(ctx: Omit<WorkerContext, 'jobRedis'>): () => void {
  const deps = planDeps(ctx);
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    checkPlanRisks(deps, 'plan-check')
      .catch((err: Error) => ctx.log.warn({ err: err.message }, 'could not check the cohort plans'))
      .finally(() => (running = false));
  }, ctx.config.COHORT_PLAN_CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
