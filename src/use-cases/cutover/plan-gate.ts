import type { CohortPlan, PauseReason, RunStretch } from '../../domain/cutover/plan.js';
import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import { withPlanCommands, type PlanCommands } from './plan-scripts.js';

/**
 * A cohort plan's gate in Redis (the scripts: `plan-scripts.ts`), shared by every API pod and worker. A
 * creation of the supplier (a v1 create, a v2 task) is admitted before it starts and settled when it ends:
 *
 * - admitted only while the plan is not paused, inside its window, and (with a canary not approved yet)
 *   while the PROCESSED so far plus the creations in flight are fewer than the canary's N: so the canary
 *   pauses at exactly N PROCESSED, whatever the concurrency;
 * - settled once (only an admitted creation counts, by its process key): the counts move, the breaker's
 *   window takes the outcome, and the script decides in the same step whether the plan pauses (a numbered
 *   transition, the cohort event's id).
 *
 * A supplier without a plan is admitted at once (one Redis call). Correctness rests on the scripts alone.
 */

export type Admission =
  | { admitted: true }
  /** Paused (never fails a task: it waits), or not now: the canary's N in flight, or outside the window. */
  | {
      admitted: false;
      reason: PauseReason | 'before_window' | 'window_ended';
      paused: boolean;
      startsAt: number;
    };

/** A pause decided by a script: its number (the cohort event's), reason and the counts at that moment. */
export type PauseTransition = {
  number: number;
  reason: PauseReason;
  processed: number;
  errored: number;
  inFlight: number;
  /** The failing codes that tripped the breaker, with their counts, largest first. */
  codes: { code: string; count: number }[];
};

/** The plan's live state as Redis holds it (null: no plan there). */
export type PlanState = {
  paused: PauseReason | null;
  since: number | null;
  note: string | null;
  codes: { code: string; count: number }[];
  processed: number;
  errored: number;
  inFlight: number;
  canaryApproved: boolean;
  atRisk: boolean;
  /**
   * The current run (admissions with no gap of `RUN_GAP_MS`), for the projection's rate: how long ago its first
   * admission was (on Redis's clock) and the plan's accounts it finished so far. Null before any admission.
   */
  run: RunStretch | null;
  /** The recent part of the run (from its older checkpoint, see `plan-scripts.ts`); null until there is one. */
  recent: RunStretch | null;
};

/** The supplier of a slot member (a process key: `<supplier>/<external>`). */
export const supplierOfMember = (member: string) => member.slice(0, member.indexOf('/'));

function codesOf(json: string | undefined): { code: string; count: number }[] {
  if (!json) return [];
  const parsed = JSON.parse(json) as Record<string, number> | unknown[];
  if (Array.isArray(parsed)) return [];
  return Object.entries(parsed)
    .map(([code, count]) => ({ code, count }))
    .sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

export class PlanGate {
  private readonly redis: RedisClient & PlanCommands;
  private readonly keys: ReturnType<typeof redisKeys>;

  constructor(redis: RedisClient, prefix: string) {
    this.redis = withPlanCommands(redis);
    this.keys = redisKeys(prefix);
  }

  private keysOf(supplier: string): [string, string, string] {
    const k = this.keys.plan(supplier);
    return [k.state, k.inFlight, k.recent];
  }

  /** Writes the plan's settings (`onlyIfMissing`: restores them where Redis lost them; the pause is kept). */
  async declare(plan: CohortPlan, onlyIfMissing = false): Promise<boolean> {
    const ms = (at: string | null) => (at ? Date.parse(at) : 0);
    const done = await this.redis.planDeclare(
      ...this.keysOf(plan.importSupplier),
      plan.expectedAccounts,
      plan.canaryAccounts ?? 0,
      plan.breaker?.errorPercent ?? 0,
      plan.breaker?.overAccounts ?? 0,
      ms(plan.windowStart),
      ms(plan.windowEnd),
      onlyIfMissing ? '1' : '0',
    );
    return done === 1;
  }

  /** Admits the creation of `member` (its process key) to start, or says why not. */
  async admit(member: string): Promise<Admission> {
    const [status, reason, startsAt] = await this.redis.planAdmit(
      ...this.keysOf(supplierOfMember(member)),
      member,
    );
    if (status === 1) return { admitted: true };
    return {
      admitted: false,
      reason: reason as PauseReason,
      paused: status === 0,
      startsAt: Number(startsAt),
    };
  }

  /**
   * The creation of `member` ended: `ok` (PROCESSED), `error` with its code (a finished account that errored),
   * or `none` (it did not finish an account: superseded, already imported, given up before it started).
   */
  async settle(member: string, outcome: 'ok' | 'error' | 'none', code = ''): Promise<PauseTransition | null> {
    const [n, reason, processed, errored, inFlight, codes] = await this.redis.planSettle(
      ...this.keysOf(supplierOfMember(member)),
      member,
      outcome,
      code,
    );
    if (n === 0) return null;
    return { number: n, reason: reason as PauseReason, processed, errored, inFlight, codes: codesOf(codes) };
  }

  /** An operator's pause: its transition, or null when the plan was paused already (`missing`: no plan). */
  async pause(supplier: string, note: string): Promise<PauseTransition | null | 'missing'> {
    const [n, , processed, errored, inFlight] = await this.redis.planPause(...this.keysOf(supplier), note);
    if (n < 0) return 'missing';
    if (n === 0) return null;
    return { number: n, reason: 'operator', processed, errored, inFlight, codes: [] };
  }

  /** Approves the canary, or resumes after the breaker or an operator: the reason it was paused for, or null. */
  async resume(supplier: string): Promise<PauseReason | null | 'missing'> {
    const was = await this.redis.planResume(...this.keysOf(supplier));
    if (was === '-') return 'missing';
    return was === '' ? null : (was as PauseReason);
  }

  /** Notes whether the plan's projection is past its window: the risk's number when it just became so. */
  async risk(supplier: string, atRisk: boolean): Promise<number> {
    return this.redis.planRisk(...this.keysOf(supplier), atRisk ? '1' : '0');
  }

  async state(supplier: string): Promise<PlanState | null> {
    const [flat, inFlight, now] = await this.redis.planRead(...this.keysOf(supplier));
    if (flat.length === 0) return null;
    const h: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) h[flat[i]!] = flat[i + 1]!;
    const paused = (h.paused || null) as PauseReason | null;
    return {
      paused,
      since: paused && h.since ? Number(h.since) : null,
      note: paused && h.note ? h.note : null,
      codes: paused ? codesOf(h.codes) : [],
      processed: Number(h.processed ?? 0),
      errored: Number(h.errored ?? 0),
      inFlight,
      canaryApproved: h.approved === '1',
      atRisk: h.at_risk === '1',
      run: h.run_at
        ? {
            ageMs: Math.max(0, now - Number(h.run_at)),
            finished: Number(h.processed ?? 0) + Number(h.errored ?? 0) - Number(h.run_done ?? 0),
          }
        : null,
      recent:
        h.run_at && Number(h.ck1_at) >= Number(h.run_at)
          ? {
              ageMs: Math.max(0, now - Number(h.ck1_at)),
              finished: Number(h.processed ?? 0) + Number(h.errored ?? 0) - Number(h.ck1_done ?? 0),
            }
          : null,
    };
  }
}
