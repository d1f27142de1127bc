import { KeyRefused, type ApiClient } from './http.js';
import { planPath, type PlanBody } from './plan.js';
import { Interrupted, pause } from './stop.js';

/** How often a held run reads the plan again. */
export const PLAN_POLL_MS = 2_000;

/**
 * A v1 create refused by the supplier's cohort plan (400 `import_supplier_migration_not_ongoing`, its detail
 * `… are paused (canary|breaker|operator): …` or `… are held back: …`), told apart from a supplier that is
 * itself Paused or Complete (`… are Paused.`: the line's outcome `supplier_closed`).
 */
export function heldByPlan(status: number, body: unknown): string | null {
  const b = (body ?? {}) as { code?: string; detail?: string };
  if (status !== 400 || b.code !== 'import_supplier_migration_not_ongoing' || !b.detail) return null;
  return / are (paused \((canary|breaker|operator)\)|held back: )/.test(b.detail) ? b.detail : null;
}

/** Whether the plan admits a creation now, or why not (`window_ended`: none will start in this window). */
export function planVerdict(
  plan: PlanBody,
  now = Date.now(),
): 'open' | 'paused' | 'waiting' | 'window_ended' {
  // Ended first: a resume would start nothing more in this window either.
  if (plan.schedule_window_end && Date.parse(plan.schedule_window_end) <= now) return 'window_ended';
  if (plan.status === 'PAUSED') return 'paused';
  if (plan.schedule_window_start && Date.parse(plan.schedule_window_start) > now) return 'waiting';
  const { canary_accounts: canary, counts } = plan;
  if (canary && !plan.canary_approved && counts.processed + counts.in_flight >= canary) return 'waiting';
  return 'open';
}

type Hold = { promise: Promise<void>; held: number };

/**
 * The run's side of the cohort plan: while a supplier's plan holds its creations (paused by the canary, the
 * breaker or an operator; its canary's accounts in flight; before its window), no account of it is sent: every
 * line of it waits here (before its stage, or after its refused create), one line on stderr says why and how to
 * resume, and the plan is read every `PLAN_POLL_MS` until it admits again; then the waiting lines go on (a
 * refused create is sent again). A window that has ended stops the run (`onWindowEnded`): the waiting lines end
 * `interrupted` (`plan_window_ended`), never recorded, so `--state` sends them in a later window. A stop of the
 * run (a signal) ends the waits at once: nothing of those lines is in flight.
 */
export class PlanHold {
  private readonly holds = new Map<string, Hold>();
  private readonly warned = new Set<string>();
  /** Suppliers whose plan's window ended: none of their accounts starts again in this run. */
  private readonly ended = new Set<string>();

  constructor(
    private readonly api: ApiClient,
    /** The supplier the run declared a plan for (null: none); lines of another supplier are warned of once. */
    private readonly declared: string | null,
    private readonly stopped: AbortSignal,
    private readonly onWindowEnded: () => void,
    private readonly pollMs = PLAN_POLL_MS,
  ) {}

  /** Starts holding at once when the plan just declared does not admit now (a rerun on a paused cohort). */
  start(plan: PlanBody): void {
    const verdict = planVerdict(plan);
    if (verdict !== 'open') this.hold(plan.import_supplier_code, describe(plan, verdict));
  }

  /** Resolves when the supplier's creations may start (at once unless held). */
  async ready(supplier: string | null): Promise<void> {
    if (!supplier) return;
    if (this.declared && supplier !== this.declared && !this.warned.has(supplier)) {
      this.warned.add(supplier);
      process.stderr.write(
        `[import-client] the file names supplier ${supplier} too: its accounts are sent without the plan declared for ${this.declared} (one supplier a file for a plan each)\n`,
      );
    }
    if (this.ended.has(supplier)) throw new Interrupted('plan_window_ended');
    const hold = this.holds.get(supplier);
    if (hold) await this.waitFor(hold);
  }

  /** A create of the supplier refused by its plan (`detail`, the service's words): waits until it admits again. */
  async refused(supplier: string, detail: string): Promise<void> {
    if (this.ended.has(supplier)) throw new Interrupted('plan_window_ended');
    await this.waitFor(this.holds.get(supplier) ?? this.hold(supplier, detail));
  }

  private async waitFor(hold: Hold): Promise<void> {
    hold.held++;
    try {
      await hold.promise;
    } finally {
      hold.held--;
    }
  }

  private hold(supplier: string, why: string): Hold {
    this.announce(supplier, why);
    const hold: Hold = { promise: Promise.resolve(), held: 0 };
    hold.promise = this.poll(supplier, hold, why).finally(() => this.holds.delete(supplier));
    hold.promise.catch(() => {
      // silent-ok: the waiting lines hear how it ended; none may be waiting yet (a hold before the first line).
    });
    this.holds.set(supplier, hold);
    return hold;
  }

  /** One line: why the supplier's accounts wait, and how to resume. */
  private announce(supplier: string, why: string): void {
    process.stderr.write(
      `[import-client] ${why.replace(/\.$/, '')}; no new account of ${supplier} starts until its plan admits again (resume: import-admin plan resume ${supplier}, the cohort page's Resume button, or POST ${planPath(supplier)}resume/); checking every ${this.pollMs / 1000} s\n`,
    );
  }

  /** Reads the plan until it admits (resolves) or the window ends or the run stops (rejects `Interrupted`). */
  private async poll(supplier: string, hold: Hold, why: string): Promise<void> {
    let said = reasonOf(why);
    for (;;) {
      await pause(this.pollMs, this.stopped);
      let answer;
      try {
        answer = await this.api.request('GET', planPath(supplier));
      } catch (err) {
        if (err instanceof Interrupted || err instanceof KeyRefused) throw err;
        process.stderr.write(
          `[import-client] cannot read the cohort plan of ${supplier} (${(err as Error).message}): trying again\n`,
        );
        continue;
      }
      // No plan any more: nothing holds the cohort back.
      if (answer.status === 404) return;
      if (answer.status !== 200) continue;
      const plan = answer.body as PlanBody;
      const verdict = planVerdict(plan);
      if (verdict === 'open') {
        process.stderr.write(
          `[import-client] the cohort plan of ${supplier} admits again: ${hold.held} held account(s) go on\n`,
        );
        return;
      }
      const now = describe(plan, verdict);
      // Said again when the reason changes (the canary's accounts held back, then the canary's pause).
      if (verdict === 'paused' && reasonOf(now) !== said) {
        said = reasonOf(now);
        this.announce(supplier, now);
      }
      if (verdict === 'window_ended') {
        process.stderr.write(
          `[import-client] the window of ${supplier}'s cohort plan ended at ${plan.schedule_window_end}: ${hold.held} held account(s) did not start; no more are sent\n`,
        );
        this.ended.add(supplier);
        this.onWindowEnded();
        throw new Interrupted('plan_window_ended');
      }
    }
  }
}

/** The pause's reason a line of words names (`paused (canary)`…), or `held` for a hold that is not a pause. */
const reasonOf = (why: string) => /paused \((canary|breaker|operator)\)/.exec(why)?.[1] ?? 'held';

/** Why a plan holds the cohort, in words (the pause's reason and detail, as the service gives them). */
function describe(plan: PlanBody, verdict: 'paused' | 'waiting' | 'window_ended'): string {
  const supplier = plan.import_supplier_code;
  if (verdict === 'window_ended')
    return `the window of ${supplier}'s cohort plan ended at ${plan.schedule_window_end}`;
  if (plan.pause)
    return `the cohort plan of ${supplier} is paused (${plan.pause.reason}): ${plan.pause.detail}`;
  if (plan.schedule_window_start && Date.parse(plan.schedule_window_start) > Date.now())
    return `the window of ${supplier}'s cohort plan starts at ${plan.schedule_window_start}`;
  return `the cohort plan of ${supplier} holds its canary's accounts (${plan.canary_accounts}) back for review`;
}
