import { z } from 'zod';
import { isoDatetime, formatUtcDatetime } from '../../schemas/primitives.js';
import { taskWindow } from '../import-process/window.js';
import { sortErrors, type FieldError } from '../validation/field-error.js';
import { issuesToFieldErrors } from '../validation/zod-issues.js';

/**
 * A cohort plan (issue 47): what an import supplier's cohort is expected to be (how many accounts, in which
 * window), and the gates that pause it (a canary of the first N PROCESSED, an error-rate breaker). Pure: the
 * body's rules, the plan's form, and the projection of its finish. The plan's live state (paused or not, its
 * counts) is kept in Redis by `use-cases/cutover/plan-gate.ts`.
 */

/** The PUT body: only `expected_accounts` is required; a null field is the same as an absent one. */
export const planBodySchema = z.strictObject({
  expected_accounts: z.number().int().min(1).describe('How many accounts the cohort has (at least 1).'),
  schedule_window_start: isoDatetime.nullable().optional(),
  schedule_window_end: isoDatetime.nullable().optional(),
  canary_accounts: z
    .number()
    .int()
    .min(1)
    .nullable()
    .optional()
    .describe('Pause once this many accounts of the plan are PROCESSED, until approved (resume).'),
  breaker: z
    .strictObject({
      error_percent: z.number().gt(0).max(100).describe('More than this % of the last accounts errored.'),
      over_accounts: z.number().int().min(10).describe('How many of the last finished accounts (≥ 10).'),
    })
    .nullable()
    .optional(),
});
export type PlanBody = z.output<typeof planBodySchema>;

export const pauseBodySchema = z.strictObject({
  reason: z.string().trim().min(1).max(200).optional().describe('Why (shown with the pause).'),
});

/** The plan as declared (what the database keeps). Times as the interface writes them, or null. */
export type CohortPlan = {
  importSupplier: string;
  expectedAccounts: number;
  windowStart: string | null;
  windowEnd: string | null;
  canaryAccounts: number | null;
  breaker: { errorPercent: number; overAccounts: number } | null;
  updatedAt: Date;
};

/** Why a plan pauses its cohort. */
export type PauseReason = 'canary' | 'breaker' | 'operator';

export const pauseDetails: Record<PauseReason, string> = {
  canary: 'the canary accounts are created: the cohort waits for approval (plan resume)',
  breaker: 'the error-rate breaker tripped: the cohort waits for an operator (plan resume)',
  operator: 'an operator paused the cohort',
};

/** An empty string is refused like every body's (`blank`), as the conventions say. */
function bodyErrors(input: unknown): FieldError[] {
  const parsed = planBodySchema.safeParse(input);
  return parsed.success ? [] : issuesToFieldErrors(parsed.error.issues, input);
}

/**
 * Checks a PUT body: its fields, then the window by the v2 `schedule_window_*` rules (codes and their paths
 * without the `task_params.` prefix). A plan without either bound has no window.
 */
export function parsePlanBody(
  input: unknown,
  now: Date,
):
  { ok: true; plan: Omit<CohortPlan, 'importSupplier' | 'updatedAt'> } | { ok: false; errors: FieldError[] } {
  const errors = bodyErrors(input);
  if (errors.length > 0) return { ok: false, errors: sortErrors(errors) };
  const body = planBodySchema.parse(input);
  let windowStart: string | null = null;
  let windowEnd: string | null = null;
  if (body.schedule_window_start || body.schedule_window_end) {
    const window = taskWindow(body, now);
    if (!window.ok) {
      const unprefixed = window.errors.map((e) => ({ ...e, attr: e.attr.replace(/^task_params\./, '') }));
      return { ok: false, errors: sortErrors(unprefixed) };
    }
    ({ windowStart, windowEnd } = window.window);
  }
  return {
    ok: true,
    plan: {
      expectedAccounts: body.expected_accounts,
      windowStart,
      windowEnd,
      canaryAccounts: body.canary_accounts ?? null,
      breaker: body.breaker
        ? { errorPercent: body.breaker.error_percent, overAccounts: body.breaker.over_accounts }
        : null,
    },
  };
}

/** The projection's rate window: the last 5 minutes (a run younger than that: the run). */
export const RATE_WINDOW_MS = 5 * 60_000;

/** The recent part of a run the projection's rate is measured over: a quarter to a half of its age, at most this. */
export const RECENT_SPACING_MAX_MS = RATE_WINDOW_MS / 2;

/** A stretch of a run: how long ago it began (ms) and the plan's accounts finished in it. */
export type RunStretch = { ageMs: number; finished: number };

/**
 * Accounts finished per minute for the projection. `recent`: the recent part of the plan's current run (from a
 * checkpoint a quarter to a half of the run's age ago, at most 2 × `RECENT_SPACING_MAX_MS`), so that a run's slow
 * start (a client ramping up, caches warming) does not weigh on the pace it keeps now; `run`: the whole current
 * run (from its first admission), when no checkpoint is old enough yet; `inWindow`: the supplier's accounts
 * finished in the last `RATE_WINDOW_MS`, when the plan admitted none of them (creations it did not admit).
 */
export function recentPerMinute(
  inWindow: number,
  run: RunStretch | null,
  recent: RunStretch | null = null,
): number {
  if (recent && recent.ageMs > 0 && recent.finished > 0) return recent.finished / (recent.ageMs / 60_000);
  if (run && run.ageMs > 0 && run.ageMs < RATE_WINDOW_MS && run.finished > 0) {
    return run.finished / (run.ageMs / 60_000);
  }
  return inWindow / (RATE_WINDOW_MS / 60_000);
}

/** What the projection is made from: counts of the cohort and its recent rate of finished accounts. */
export type ProjectionInput = {
  expected: number;
  /** Accounts whose creation finished (PROCESSED, ERRORED, DRY_RUN_*). */
  done: number;
  /** Accounts finished per minute, recently (`recentPerMinute`). */
  perMinute: number;
  windowEnd: string | null;
  now: Date;
};

export type Projection = {
  percent: number;
  remaining: number;
  projectedFinish: string | null;
  /** Null without a window or a projection; true when the projection ends after the window does. */
  atRisk: boolean | null;
};

/** The finish the remaining accounts project at the recent rate; none while nothing finishes. */
export function project({ expected, done, perMinute, windowEnd, now }: ProjectionInput): Projection {
  const remaining = Math.max(0, expected - done);
  const percent = Math.min(100, Math.round((done / expected) * 1000) / 10);
  let finishMs: number | null = null;
  if (remaining === 0) finishMs = now.getTime();
  // To the nearest second (the format's resolution).
  else if (perMinute > 0)
    finishMs = Math.round((now.getTime() + (remaining / perMinute) * 60_000) / 1000) * 1000;
  const projectedFinish = finishMs === null ? null : formatUtcDatetime(new Date(finishMs));
  const atRisk = windowEnd === null || finishMs === null ? null : finishMs > Date.parse(windowEnd);
  return { percent, remaining, projectedFinish, atRisk };
}
