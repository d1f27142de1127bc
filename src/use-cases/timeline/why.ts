import type { ProcessState } from '../../domain/import-process/state.js';
import { pauseDetails } from '../../domain/cutover/plan.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import type { Storage } from '../../storage/index.js';
import type { ProcessRow } from '../../storage/processes/import-processes.js';
import { taskJobId } from '../creation/schedule.js';
import type { CreationSlots } from '../creation/slots.js';
import type { PlanGate } from '../cutover/plan-gate.js';
import { readPlan } from '../cutover/plan.js';

/**
 * Why the account is where it is now, in words and a code: the end of its timeline. Decided from its history's
 * state and, while it waits, from what it waits on (its window, its cohort plan, the creation queue's workers,
 * its organisation's line for a creation slot), in that order: the first that holds it back is the reason.
 */

export const whyCodes = [
  'done',
  'failed',
  'cancelled',
  'dry_run_succeeded',
  'skipped',
  'creating',
  'staged',
  'waiting_for_window',
  'cohort_paused',
  'no_worker',
  'waiting_for_slot',
  'queued',
] as const;
export type WhyCode = (typeof whyCodes)[number];

export type Why = { code: WhyCode; detail: string; since: string | null; data: Record<string, unknown> };

/** The creation queue as far as the timeline looks at it (built by the route over BullMQ's queue). */
export type CreationQueueView = {
  /** A job's state (`waiting`, `delayed`, `prioritized`, `active`, …; `unknown` when there is none). */
  jobState(jobId: string): Promise<string>;
  /** Workers connected to the creation queue now. */
  workers(): Promise<number>;
};

export type WhyDeps = {
  storage: Storage;
  slots: CreationSlots;
  plans: PlanGate;
  queue: CreationQueueView;
};

export type WhyInput = {
  process: ProcessRow;
  state: ProcessState;
  /** When the history's latest event happened (ms), and a task's due time (ms) when one waits. */
  latestAt: number | null;
  dueAt: number | null;
  postImports: number;
  /** The worker of the latest start, as it recorded itself. */
  worker: string | null;
  now: number;
};

const iso = (ms: number | null) => (ms === null ? null : formatUtcDatetime(new Date(ms)));
const why = (
  code: WhyCode,
  detail: string,
  since: number | null,
  data: Record<string, unknown> = {},
): Why => ({
  code,
  detail,
  since: iso(since),
  data,
});

export async function explain(deps: WhyDeps, input: WhyInput): Promise<Why> {
  const { process, state, latestAt, now } = input;
  if (process.skipped) return why('skipped', 'An operator marked the account to be skipped.', null);
  const status = state.status ?? (process.krakenAccountNumber ? 'PROCESSED' : 'PENDING');
  switch (status) {
    case 'PROCESSED': {
      const number = state.krakenAccountNumber ?? process.krakenAccountNumber ?? null;
      const since = latestAt ?? process.accountCreatedAt?.getTime() ?? null;
      const writes = input.postImports;
      return why(
        'done',
        `Done: created as ${number ?? '(unknown)'}${writes > 0 ? `, with ${writes} post-import write${writes === 1 ? '' : 's'} since` : ''}.`,
        since,
        { kraken_account_number: number, post_import_writes: writes },
      );
    }
    case 'ERRORED':
    case 'DRY_RUN_ERRORED': {
      const error = state.latestError;
      const errors = state.latestEvent?.data.errors;
      const paths = Array.isArray(errors)
        ? [
            ...new Set(
              (errors as { attr?: string }[]).map((e) => e.attr).filter((a) => typeof a === 'string'),
            ),
          ]
        : [];
      const where =
        paths.length > 0 ? ` at ${paths.slice(0, 5).join(', ')}${paths.length > 5 ? ', …' : ''}` : '';
      return why(
        'failed',
        `${status === 'DRY_RUN_ERRORED' ? 'The dry run failed' : 'Failed'} with ${error?.code ?? 'an error'}${where}: ${error?.detail ?? ''}`.trim(),
        latestAt,
        { code: error?.code ?? null, paths, dry_run: status === 'DRY_RUN_ERRORED' },
      );
    }
    case 'CANCELLED':
      return why('cancelled', 'Its scheduled task was cancelled; the staged data stays.', latestAt);
    case 'DRY_RUN_SUCCEEDED':
      return why('dry_run_succeeded', 'The dry run would have created it; nothing was created.', latestAt);
    case 'IN_PROGRESS': {
      const worker = input.worker;
      return why(
        'creating',
        `Being created on worker ${worker ?? '(not recorded)'} for ${Math.round((now - (latestAt ?? now)) / 1000)} s.`,
        latestAt,
        { worker },
      );
    }
    default:
      return state.task ? waitingTask(deps, input) : waitingStaged(deps, input);
  }
}

/** A scheduled task the process waits for. */
async function waitingTask(deps: WhyDeps, input: WhyInput): Promise<Why> {
  const { process, state, now } = input;
  const task = state.task!;
  const windowStart = Date.parse(task.windowStart);
  if (now < windowStart)
    return why(
      'waiting_for_window',
      `Waiting for its window: task ${task.id} may start from ${task.windowStart} (in ${Math.ceil((windowStart - now) / 1000)} s).`,
      input.latestAt,
      {
        window_start: task.windowStart,
        window_end: task.windowEnd,
        seconds: Math.ceil((windowStart - now) / 1000),
      },
    );
  const plan = task.dryRun
    ? null
    : await readPlan({ storage: deps.storage, gate: deps.plans }, process.importSupplier);
  const paused = plan?.state?.paused;
  if (plan && paused) {
    const detail = plan.state?.note ?? pauseDetails[paused];
    return why('cohort_paused', `Its cohort is paused (${paused}): ${detail}`, plan.state?.since ?? null, {
      reason: paused,
      pause_detail: detail,
      codes: plan.state?.codes ?? [],
    });
  }
  const planStart = plan?.plan.windowStart ? Date.parse(plan.plan.windowStart) : null;
  if (planStart !== null && now < planStart)
    return why(
      'waiting_for_window',
      `Waiting for its cohort plan's window, from ${plan!.plan.windowStart} (in ${Math.ceil((planStart - now) / 1000)} s).`,
      input.latestAt,
      {
        window_start: plan!.plan.windowStart,
        window_end: plan!.plan.windowEnd,
        seconds: Math.ceil((planStart - now) / 1000),
      },
    );
  const jobId = taskJobId(process._id, task.id);
  const due = input.dueAt ?? windowStart;
  const [workers, place] = await Promise.all([
    deps.queue.workers(),
    deps.slots.linePlace(String(process.organisationId), jobId),
  ]);
  if (workers === 0) return noWorker(due, now);
  if (place !== null) {
    const use = await deps.slots.usage(String(process.organisationId));
    return why(
      'waiting_for_slot',
      `Waiting for a creation slot: ${place} of its organisation's task${place === 1 ? '' : 's'} ahead; its organisation holds ${use.inUse} of its share of ${Math.round(use.share * 100) / 100} (limit ${deps.slots.limit}).`,
      due,
      { ahead: place, in_use: use.inUse, share: Math.round(use.share * 100) / 100, limit: deps.slots.limit },
    );
  }
  const jobState = await deps.queue.jobState(jobId);
  return why(
    'queued',
    `Due for ${Math.round((now - due) / 1000)} s, its job ${jobState}: a worker starts it as soon as it reaches it.`,
    due,
    { job_state: jobState },
  );
}

/** Staged, and no task waits: a v1 create may be queued (its request stopped waiting), or nothing is. */
async function waitingStaged(deps: WhyDeps, input: WhyInput): Promise<Why> {
  const { process, now } = input;
  const job = process.creationJobId;
  if (job) {
    const [jobState, workers] = await Promise.all([deps.queue.jobState(job), deps.queue.workers()]);
    if (['waiting', 'delayed', 'prioritized'].includes(jobState)) {
      const since = process.updatedAt?.getTime() ?? now;
      return workers === 0
        ? noWorker(since, now)
        : why(
            'queued',
            `Its create is queued (job ${jobState}): a worker starts it as soon as it reaches it.`,
            since,
            {
              job_state: jobState,
            },
          );
    }
  }
  if (await deps.slots.isHeld(process._id))
    return why('creating', 'A create of it is under way: queued or starting on a worker.', null, {
      worker: null,
    });
  return why(
    'staged',
    'Staged and valid; no creation is scheduled or running: schedule it (v2) or create it (v1).',
    process.stagedAt?.getTime() ?? null,
  );
}

function noWorker(since: number, now: number): Why {
  const s = Math.max(0, Math.floor((now - since) / 1000));
  return why(
    'no_worker',
    `No worker is consuming the creation queue: due for ${s} s and not taken. Start the workers (the \`worker\` process).`,
    since,
    { seconds: s },
  );
}
