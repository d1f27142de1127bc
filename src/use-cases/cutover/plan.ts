import type { Types } from 'mongoose';
import {
  parsePlanBody,
  pauseDetails,
  project,
  RATE_WINDOW_MS,
  recentPerMinute,
  type CohortPlan,
} from '../../domain/cutover/plan.js';
import type { FieldError } from '../../domain/validation/field-error.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import type { Storage } from '../../storage/index.js';
import type { RecordedEvent } from '../../storage/processes/process-event-records.js';
import { ratesOf } from '../progress/cohort.js';
import type { PauseTransition, PlanGate, PlanState } from './plan-gate.js';

/**
 * The cohort plan's use cases (issue 47): declare it, read it, pause and resume it, publish its transitions
 * (`cohort.paused-v1`, `cohort.at_risk-v1`), and its part of the progress body. The gate itself (admission,
 * settlement, the pause decisions) is `plan-gate.ts`; the creation paths call it through `creation-gate.ts`.
 */

export type PlanDeps = {
  storage: Storage;
  gate: PlanGate;
  clock: () => Date;
  /** Hands recorded events to the webhooks (the relay of the process). */
  relay: (events: RecordedEvent[], requestId: string) => Promise<void>;
};

type SupplierRef = { code: string; organisationId: Types.ObjectId };

const at = (ms: number | null) => (ms === null ? null : formatUtcDatetime(new Date(ms)));

/** The plan's answer (PUT, GET, pause, resume): what was declared and the state it is in. */
export function describePlan(plan: CohortPlan, state: PlanState | null) {
  const paused = state?.paused ?? null;
  return {
    import_supplier_code: plan.importSupplier,
    expected_accounts: plan.expectedAccounts,
    schedule_window_start: plan.windowStart,
    schedule_window_end: plan.windowEnd,
    canary_accounts: plan.canaryAccounts,
    breaker: plan.breaker
      ? { error_percent: plan.breaker.errorPercent, over_accounts: plan.breaker.overAccounts }
      : null,
    status: paused ? ('PAUSED' as const) : ('ACTIVE' as const),
    pause: describePause(state),
    canary_approved: state?.canaryApproved ?? false,
    counts: {
      processed: state?.processed ?? 0,
      errored: state?.errored ?? 0,
      in_flight: state?.inFlight ?? 0,
    },
    updated_at: formatUtcDatetime(plan.updatedAt),
  };
}
export type PlanBodyAnswer = ReturnType<typeof describePlan>;

function describePause(state: PlanState | null) {
  if (!state?.paused) return null;
  return {
    reason: state.paused,
    detail: state.note ?? pauseDetails[state.paused],
    since: at(state.since),
    codes: state.codes,
  };
}

/** Declares or updates the supplier's plan: one per supplier, a rerun replaces its settings. */
export async function declarePlan(
  deps: PlanDeps,
  supplier: SupplierRef,
  body: unknown,
): Promise<{ ok: true; plan: PlanBodyAnswer } | { ok: false; errors: FieldError[] }> {
  const now = deps.clock();
  const parsed = parsePlanBody(body, now);
  if (!parsed.ok) return parsed;
  const plan = await deps.storage.cohortPlans.put(supplier, parsed.plan, now);
  await deps.gate.declare(plan);
  return { ok: true, plan: describePlan(plan, await deps.gate.state(supplier.code)) };
}

/** The supplier's plan and its state; null without one. */
export async function readPlan(deps: Pick<PlanDeps, 'storage' | 'gate'>, code: string) {
  const plan = await deps.storage.cohortPlans.find(code);
  if (!plan) return null;
  let state = await deps.gate.state(code);
  // Redis lost the plan (a flush, a new node): its settings are restored from the database.
  if (!state && (await deps.gate.declare(plan, true))) state = await deps.gate.state(code);
  return { plan, state };
}

/** Records a pause as its `cohort.paused-v1` (once per transition: its number is the event's id) and relays it. */
export async function publishPause(
  deps: PlanDeps,
  supplier: SupplierRef,
  pause: PauseTransition,
  requestId: string,
  note = '',
): Promise<void> {
  const event = await deps.storage.cohortEvents.record(
    supplier,
    'cohort.paused-v1',
    pause.number,
    {
      reason: pause.reason,
      detail: note || pauseDetails[pause.reason],
      counts: { processed: pause.processed, errored: pause.errored, in_flight: pause.inFlight },
      codes: pause.codes,
    },
    deps.clock(),
  );
  await deps.relay([event], requestId);
}

/** An operator's pause (`reason`: free text ≤ 200, shown with the pause). Null: no plan. */
export async function pausePlan(deps: PlanDeps, supplier: SupplierRef, note: string, requestId: string) {
  const read = await readPlan(deps, supplier.code);
  if (!read) return null;
  const pause = await deps.gate.pause(supplier.code, note);
  if (pause && pause !== 'missing') await publishPause(deps, supplier, pause, requestId, note);
  return describePlan(read.plan, await deps.gate.state(supplier.code));
}

/** Approves the canary, or resumes after the breaker or an operator's pause. Null: no plan. */
export async function resumePlan(deps: PlanDeps, code: string) {
  const read = await readPlan(deps, code);
  if (!read) return null;
  await deps.gate.resume(code);
  return describePlan(read.plan, await deps.gate.state(code));
}

/** What the progress body says of the plan (null without one): read from counters, not from processes. */
export async function planProgress(deps: Pick<PlanDeps, 'storage' | 'gate'>, code: string, now: Date) {
  const read = await readPlan(deps, code);
  if (!read || !deps.storage.progress) return null;
  const nowMinute = Math.floor(now.getTime() / 60_000);
  const { counts, minutes } = await deps.storage.progress.snapshot(code, nowMinute - 15, nowMinute);
  const done = ['PROCESSED', 'ERRORED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED'].reduce(
    (sum, s) => sum + Math.max(0, counts[s] ?? 0),
    0,
  );
  // Finished accounts (PROCESSED and errored) per minute over the recent part of the plan's run, or over the
  // whole run when it is too young for one, or over the last 5 minutes (its own counters: no scan).
  const { processedIn } = ratesOf(
    minutes.map((m) => ({ P: m.P + m.E })),
    now,
  );
  const projection = project({
    expected: read.plan.expectedAccounts,
    done,
    perMinute: recentPerMinute(
      processedIn(RATE_WINDOW_MS / 60_000),
      read.state?.run ?? null,
      read.state?.recent ?? null,
    ),
    windowEnd: read.plan.windowEnd,
    now,
  });
  return {
    expected_accounts: read.plan.expectedAccounts,
    done,
    percent_done: projection.percent,
    projected_finish: projection.projectedFinish,
    schedule_window_end: read.plan.windowEnd,
    finishes_in_window: projection.atRisk === null ? null : !projection.atRisk,
    pause: describePause(read.state),
  };
}
export type PlanProgress = NonNullable<Awaited<ReturnType<typeof planProgress>>>;

/**
 * The workers' periodic look at every plan with a window: a projection past the window's end makes the plan
 * at risk, published once per transition (`cohort.at_risk-v1`, numbered by the gate's script); one back inside
 * ends the risk. Also restores plans Redis lost. Returns how many risks it published.
 */
export async function checkPlanRisks(deps: PlanDeps, requestId: string): Promise<number> {
  let published = 0;
  for (const plan of await deps.storage.cohortPlans.list()) {
    await deps.gate.declare(plan, true);
    if (!plan.windowEnd) continue;
    const now = deps.clock();
    const progress = await planProgress(deps, plan.importSupplier, now);
    if (!progress || progress.finishes_in_window === null) continue;
    const risk = await deps.gate.risk(plan.importSupplier, !progress.finishes_in_window);
    if (risk === 0) continue;
    const supplier = { code: plan.importSupplier, organisationId: plan.organisationId };
    const event = await deps.storage.cohortEvents.record(
      supplier,
      'cohort.at_risk-v1',
      risk,
      {
        // The window and count the projection was made with (the plan may have been declared again since the
        // list was read).
        projected_finish: progress.projected_finish,
        schedule_window_end: progress.schedule_window_end,
        counts: { expected: progress.expected_accounts, done: progress.done },
      },
      now,
    );
    await deps.relay([event], requestId);
    published++;
  }
  return published;
}
