/**
 * The state of an account's import process, as v2 reports it, and the rules of its transitions. Pure: the
 * storage keeps the history (`src/storage/process-events.ts`), this decides what may be appended to it.
 *
 * Every change is one event appended to the process's history; the state is the fold of that history, so
 * a decision is always made against exactly the events it follows.
 */

export const processEventKinds = [
  'CREATED',
  'SCHEDULED',
  'STARTED',
  'PROCESSED',
  'ERRORED',
  'CANCELLED',
  'DRY_RUN_SUCCEEDED',
  'DRY_RUN_ERRORED',
] as const;
export type ProcessEventKind = (typeof processEventKinds)[number];

/** Written over a history position that its writer abandoned (see the storage); skipped by the fold. */
export const VOID_EVENT = 'VOID';

export const processStatuses = [
  'PENDING',
  'IN_PROGRESS',
  'PROCESSED',
  'ERRORED',
  'CANCELLED',
  'DRY_RUN_SUCCEEDED',
  'DRY_RUN_ERRORED',
] as const;
export type ProcessStatus = (typeof processStatuses)[number];

export const eventName = (kind: ProcessEventKind) => `EVENT_ACCOUNT_IMPORT_PROCESS_${kind}`;

/** The webhook event types (the platform's import event catalogue). */
export const webhookEventTypes = [
  'data_import.import_process.complete-v1',
  'data_import.import_process.error-v1',
  'data_import.import_process.cancelled-v1',
  'data_import.import_process.dry_run_complete-v1',
  'data_import.import_process.dry_run_error-v1',
  'data_import.import_process.post_import.completed-v1',
  'data_import.import_process.post_import.error-v1',
  // A supplier's cohort plan (issue 47): paused (canary, breaker, operator), or its projection past its window.
  'cohort.paused-v1',
  'cohort.at_risk-v1',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/** The webhook type a process event is published as; CREATED, SCHEDULED and STARTED are not published. */
export const webhookTypeOf: Record<ProcessEventKind, WebhookEventType | null> = {
  CREATED: null,
  SCHEDULED: null,
  STARTED: null,
  PROCESSED: 'data_import.import_process.complete-v1',
  ERRORED: 'data_import.import_process.error-v1',
  CANCELLED: 'data_import.import_process.cancelled-v1',
  DRY_RUN_SUCCEEDED: 'data_import.import_process.dry_run_complete-v1',
  DRY_RUN_ERRORED: 'data_import.import_process.dry_run_error-v1',
};

export type ProcessError = { code: string; detail: string; domain: string };

/** A scheduled creation task: its id is the history position of its SCHEDULED event. */
export type Task = {
  id: number;
  windowStart: string;
  windowEnd: string;
  dryRun: boolean;
  operationsTeamId: string;
  /** The hash of the payload the task creates from (tasks recorded before it existed: the staged one). */
  payloadHash?: string;
};

export type ProcessEvent = {
  seq: number;
  kind: ProcessEventKind;
  occurredAt: Date;
  data: Record<string, unknown>;
  run: string | null;
};

export type ProcessState = {
  /** Null: the process has no history (staged before events existed, or never staged). */
  status: ProcessStatus | null;
  krakenAccountNumber: string | null;
  /** The scheduled task the process waits for (status PENDING), or the one that started it. */
  task: Task | null;
  /** The run (job id) of the latest STARTED event, while IN_PROGRESS. */
  run: string | null;
  latestEvent: ProcessEvent | null;
  latestError: ProcessError | null;
  /** Position of the newest entry (-1 for none); a change is written at `seq + 1`. */
  seq: number;
};

export const emptyState: ProcessState = {
  status: null,
  krakenAccountNumber: null,
  task: null,
  run: null,
  latestEvent: null,
  latestError: null,
  seq: -1,
};

const statusAfter: Record<ProcessEventKind, ProcessStatus> = {
  CREATED: 'PENDING',
  SCHEDULED: 'PENDING',
  STARTED: 'IN_PROGRESS',
  PROCESSED: 'PROCESSED',
  ERRORED: 'ERRORED',
  CANCELLED: 'CANCELLED',
  DRY_RUN_SUCCEEDED: 'DRY_RUN_SUCCEEDED',
  DRY_RUN_ERRORED: 'DRY_RUN_ERRORED',
};

/** The state after one more event (a VOID entry only moves the position). */
export function foldEvent(state: ProcessState, seq: number, event: ProcessEvent | null): ProcessState {
  if (!event) return { ...state, seq };
  const next: ProcessState = { ...state, seq, latestEvent: event, status: statusAfter[event.kind] };
  switch (event.kind) {
    case 'SCHEDULED':
      next.task = taskOf(event);
      next.run = null;
      break;
    case 'STARTED':
      next.run = event.run;
      // A v1 create starts without a task; a task's start keeps it.
      if (event.data.task === undefined) next.task = null;
      break;
    case 'PROCESSED':
      next.krakenAccountNumber = (event.data.kraken_account_number as string | undefined) ?? null;
      next.run = null;
      break;
    case 'ERRORED':
    case 'DRY_RUN_ERRORED': {
      const error = event.data.error as ProcessError | undefined;
      if (error) next.latestError = error;
      next.run = null;
      break;
    }
    default:
      next.run = null;
  }
  return next;
}

/**
 * Whether nothing of `state` outlives a SCHEDULED event appended to it: the event sets the status, task, run
 * and latest event anew, so only an account number or an error could pass on. A task whose history before it
 * is fresh needs nothing of that history: the state at its own entry follows from the entry (`stateAtSchedule`).
 */
export function isFresh(state: ProcessState): boolean {
  return state.krakenAccountNumber === null && state.latestError === null;
}

/**
 * The state right after a SCHEDULED event, for a history that was fresh before it (`isFresh`); null for any
 * other event (a VOID, a cancel, …), whose state depends on the history before it.
 */
export function stateAtSchedule(event: ProcessEvent | null): ProcessState | null {
  if (event?.kind !== 'SCHEDULED') return null;
  return foldEvent({ ...emptyState, seq: event.seq - 1 }, event.seq, event);
}

function taskOf(event: ProcessEvent): Task {
  const d = event.data;
  return {
    id: event.seq,
    windowStart: d.schedule_window_start as string,
    windowEnd: d.schedule_window_end as string,
    dryRun: d.is_dry_run === true,
    operationsTeamId: d.operations_team_id as string,
    ...(typeof d.payload_hash === 'string' ? { payloadHash: d.payload_hash } : {}),
  };
}

/** What a decision appends: one event, or nothing. */
export type NewEvent = {
  kind: ProcessEventKind;
  data: Record<string, unknown>;
  run?: string | null;
  /** A start's worker (`<host>:<pid>`) and when its job was queued: kept beside the event, not in its data. */
  worker?: string;
  queuedAt?: Date;
};

// ---- The transitions ------------------------------------------------------------------------------------

/** A first stage (v1 stage or v2 schedule) records CREATED; later stages change no state. */
export function onStaged(state: ProcessState): NewEvent | null {
  return state.seq < 0 ? { kind: 'CREATED', data: {} } : null;
}

export type ScheduleRefusal = 'account_import_in_progress' | 'account_import_process_already_imported';

/** A schedule while nothing runs: a new task (replacing a task that has not started). */
export function onSchedule(
  state: ProcessState,
  task: Omit<Task, 'id'>,
): { refusal: ScheduleRefusal } | { event: NewEvent } {
  if (state.status === 'IN_PROGRESS') return { refusal: 'account_import_in_progress' };
  if (state.status === 'PROCESSED') return { refusal: 'account_import_process_already_imported' };
  return {
    event: {
      kind: 'SCHEDULED',
      data: {
        schedule_window_start: task.windowStart,
        schedule_window_end: task.windowEnd,
        is_dry_run: task.dryRun,
        operations_team_id: task.operationsTeamId,
        ...(task.payloadHash ? { payload_hash: task.payloadHash } : {}),
      },
    },
  };
}

/** Only a task that has not started can be cancelled. */
export function onCancel(state: ProcessState): NewEvent | null {
  return state.status === 'PENDING' && state.task ? { kind: 'CANCELLED', data: {} } : null;
}

export type StartDecision =
  /** Write STARTED, then run. */
  | { start: NewEvent }
  /** Already started by this same run (a retry after a crash): run without writing. */
  | { resume: true }
  /** Not this run's to do (a task replaced, cancelled or overtaken): end without effect. */
  | { skip: 'superseded' | 'already_processed' };

/**
 * A creation run starting. A scheduled task (`taskId`) starts only while it is the process's pending task;
 * a v1 create starts whatever was scheduled (it overtakes the task, which then ends without effect).
 */
export function onStart(state: ProcessState, run: string, taskId: number | null): StartDecision {
  if (state.status === 'IN_PROGRESS' && state.run === run) return { resume: true };
  if (state.status === 'PROCESSED') return { skip: 'already_processed' };
  if (taskId === null) return { start: { kind: 'STARTED', data: {}, run } };
  if (state.status === 'PENDING' && state.task?.id === taskId)
    return { start: { kind: 'STARTED', data: { task: taskId }, run } };
  return { skip: 'superseded' };
}

/** A task that could not start inside its window. */
export function onWindowExpired(state: ProcessState, taskId: number): NewEvent | null {
  if (state.status !== 'PENDING' || state.task?.id !== taskId) return null;
  return {
    kind: 'ERRORED',
    data: {
      error: {
        code: 'schedule_window_expired',
        detail: 'The task could not start before its schedule window ended.',
        domain: 'import_process',
      },
    },
  };
}

export type RunOutcome =
  | { kind: 'PROCESSED'; krakenAccountNumber: string }
  | { kind: 'ERRORED' | 'DRY_RUN_ERRORED'; error: ProcessError; errors?: { code: string; attr: string }[] }
  | { kind: 'DRY_RUN_SUCCEEDED' };

/**
 * A run's outcome. An account created is recorded once, whoever created it; a failure only while this run
 * is the one in progress (a later run's start, or the account's creation, supersedes it).
 */
export function onFinish(state: ProcessState, run: string, outcome: RunOutcome): NewEvent | null {
  if (outcome.kind === 'PROCESSED') {
    if (state.status === 'PROCESSED') return null;
    return {
      kind: 'PROCESSED',
      data: { kraken_account_number: outcome.krakenAccountNumber },
      run,
    };
  }
  if (state.status !== 'IN_PROGRESS' || state.run !== run) return null;
  if (outcome.kind === 'DRY_RUN_SUCCEEDED') return { kind: 'DRY_RUN_SUCCEEDED', data: {}, run };
  return {
    kind: outcome.kind,
    data: { error: outcome.error, ...(outcome.errors ? { errors: outcome.errors } : {}) },
    run,
  };
}
