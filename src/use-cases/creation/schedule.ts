import {
  emptyState,
  isFresh,
  onCancel,
  onSchedule,
  type ProcessState,
  type Task,
} from '../../domain/import-process/state.js';
import type { Storage } from '../../storage/index.js';
import { payloadHash } from '../../storage/processes/import-processes.js';
import type { ProcessIdentity, RecordedEvent } from '../../storage/processes/process-event-records.js';
import { processKey } from '../../storage/processes/process-key.js';
import { jobId, type JobData } from '../../jobs/catalog.js';
import { stageAccount, type StageInput } from './staging.js';

/**
 * v2 scheduling: stage the payload and record a creation task that a delayed job runs inside its window
 * (`workers/run-import-task.ts`), or cancel a task that has not started.
 */

/** What a task's job knows besides its position: what its schedule saw of the history before it. */
export type TaskHints = Pick<
  JobData<'run-import-task'>,
  'freshBefore' | 'organisationId' | 'windowStart' | 'windowEnd'
>;

/** What scheduling needs of the creation queue. */
export type TaskQueue = {
  /** Queues task `taskId` of a process (idempotent on its id), due in `delayMs`. */
  add(processId: string, taskId: number, delayMs: number, hints: TaskHints): Promise<void>;
  /** Removes a task's job if it is still waiting (best effort: a job that runs anyway finds itself replaced). */
  remove(processId: string, taskId: number): Promise<void>;
  /**
   * Whether a creation of the process holds its slot: a v1 create queued but not started yet has no STARTED
   * in the history, only its slot.
   */
  creating(processId: string): Promise<boolean>;
};

export type ScheduleOutcome =
  | { status: 'scheduled'; taskId: number }
  | { status: 'already_imported'; krakenAccountNumber: string }
  | { status: 'skipped' }
  | { status: 'in_progress' };

/** How much later than its window's start a task due at once is queued (see `scheduleAccount`). */
const ENTRY_WRITE_ALLOWANCE_MS = 100;

/** A task's job id: the process key may hold ':' (not allowed in job ids), hence the encoding. */
export function taskJobId(processId: string, taskId: number): string {
  return jobId('task', encodeURIComponent(processId), String(taskId));
}

export async function scheduleAccount(
  storage: Storage,
  queue: TaskQueue,
  input: StageInput & { task: Omit<Task, 'id'> },
): Promise<ScheduleOutcome> {
  const { events } = storage;
  const identity: ProcessIdentity = {
    key: processKey(input.importSupplier, input.externalAccountNumber),
    organisationId: input.organisationId,
    importSupplier: input.importSupplier,
    externalAccountNumber: input.externalAccountNumber,
  };
  // A refused schedule changes nothing: a running creation is told before anything is staged. Without a
  // process, nothing can be creating it (a creation starts from a staged process): its history is not read
  // (the usual first schedule of an account).
  const process = await storage.processes.find(identity.key);
  const [before, creating] = await Promise.all([
    process ? events.state(identity.key) : emptyState,
    queue.creating(identity.key),
  ]);
  if (before.status === 'IN_PROGRESS' || creating) return { status: 'in_progress' };

  // The payload is staged deferred: one that would replace another is kept under its hash and becomes the
  // staged one only once the task is recorded. A task that starts in between (the schedule is then refused)
  // creates from the payload it was scheduled with, and the refused schedule has changed nothing.
  const staged = await stageAccount(storage, input, 'defer', { process });
  if (staged.status === 'already_imported' || staged.status === 'skipped') return staged;
  const task = { ...input.task, payloadHash: payloadHash(input.payload) };

  const delayMs = taskDelay(input.task, input.now);
  let replaced: number | null = null;
  const { result } = await events.append<ScheduleOutcome>(
    identity,
    async (state) => {
      const decision = onSchedule(state, task);
      if ('refusal' in decision) {
        const outcome: ScheduleOutcome =
          decision.refusal === 'account_import_in_progress'
            ? { status: 'in_progress' }
            : { status: 'already_imported', krakenAccountNumber: state.krakenAccountNumber ?? '' };
        return { event: null, result: outcome };
      }
      // The job first, at the position the task will hold: a recorded task always has its job (a job whose
      // event never comes gives its position up, see the task's processor).
      // The job also says whether the history before the task is fresh, so that the task need not read it.
      const taskId = state.seq + 1;
      await queue.add(identity.key, taskId, delayMs, {
        freshBefore: isFresh(state),
        organisationId: String(identity.organisationId),
        windowStart: Date.parse(task.windowStart),
        windowEnd: Date.parse(task.windowEnd),
      });
      replaced = pendingTask(state);
      return { event: decision.event, result: { status: 'scheduled' as const, taskId } };
    },
    input.now,
  );
  if (result.status === 'scheduled' && staged.deferred)
    await storage.processes.promoteStaged(identity.key, input.payload, input.now, input.validatedWith);
  // Best effort: a replaced task's job that runs anyway finds itself superseded.
  if (replaced !== null) await queue.remove(identity.key, replaced).catch(() => undefined); // silent-ok: superseded
  return result;
}

/**
 * How long from `now` a task's job waits. A task due at once is still queued a moment later (within its
 * window): its job is queued before its entry is written, and one that looked before the write landed read
 * twice, then the whole history (about a fifth of tasks did under load). Nothing rests on the moment: a task
 * that looks early still waits for its entry (see the task's processor).
 */
function taskDelay(window: { windowStart: string; windowEnd: string }, now: Date): number {
  const nowMs = now.getTime();
  const untilEnd = Date.parse(window.windowEnd) - nowMs;
  return Math.max(
    Date.parse(window.windowStart) - nowMs,
    Math.min(ENTRY_WRITE_ALLOWANCE_MS, Math.floor(untilEnd / 2)),
    0,
  );
}

/** The task a process waits for (that a new schedule replaces), if any. */
function pendingTask(state: ProcessState): number | null {
  return state.status === 'PENDING' && state.task ? state.task.id : null;
}

export type CancelOutcome =
  | { status: 'cancelled'; recorded: RecordedEvent | null }
  | { status: 'not_cancellable' }
  | { status: 'not_found' };

/** Cancels the task a process waits for; one that started (or none) cannot be. */
export async function cancelTask(
  storage: Storage,
  queue: TaskQueue,
  importSupplier: string,
  externalAccountNumber: string,
  now: Date,
): Promise<CancelOutcome> {
  const key = processKey(importSupplier, externalAccountNumber);
  const process = await storage.processes.find(key);
  if (!process) return { status: 'not_found' };
  const identity = {
    key,
    organisationId: process.organisationId,
    importSupplier,
    externalAccountNumber,
  };
  let task: number | null = null;
  const { result, recorded } = await storage.events.append(
    identity,
    (state) => {
      task = pendingTask(state);
      const event = onCancel(state);
      return { event, result: event ? ('cancelled' as const) : ('not_cancellable' as const) };
    },
    now,
  );
  if (result === 'not_cancellable') return { status: 'not_cancellable' };
  // Best effort: a cancelled task's job that runs anyway finds itself superseded.
  if (task !== null) await queue.remove(key, task).catch(() => undefined); // silent-ok: superseded
  return { status: 'cancelled', recorded };
}
