import { hostname } from 'node:os';
import {
  emptyState,
  foldEvent,
  onFinish,
  onStart,
  type NewEvent,
  type ProcessError,
  type RunOutcome,
} from '../../domain/import-process/state.js';
import type { ProcessEventLog } from '../../storage/processes/process-events.js';
import type { ProcessIdentity, RecordedEvent } from '../../storage/processes/process-event-records.js';

/** What a creation answered, as far as its history cares (`CreationOutcome` of `create-account.ts`). */
type CreationOutcome =
  | { ok: true; kraken_account_number: string }
  | { ok: false; code: string; detail?: string; errors?: { code: string; attr: string }[] };

/** Who runs a creation: a v1 create job (`taskId` null) or a v2 scheduled task; `id` is the job id. */
export type RunIdentity = {
  id: string;
  taskId: number | null;
  /** When the run's job was queued (ms; BullMQ's `job.timestamp`), recorded with its start for the timeline. */
  queuedAt?: number;
  /** Told of every event recorded, for the webhook relay. */
  onRecorded?: (event: RecordedEvent) => void;
};

const afterCreated = foldEvent(emptyState, 0, {
  seq: 0,
  kind: 'CREATED',
  occurredAt: new Date(0),
  data: {},
  run: null,
});

/** How a worker names itself in the history of the creations it runs: its host (a pod's name) and process. */
export const WORKER_NAME = `${hostname()}:${process.pid}`;

const FAILED: ProcessError = {
  code: 'account_creation_failed',
  detail: 'The account could not be created. Retry it; the operators have the details.',
  domain: 'import_process',
};

/** A run whose worker stopped under it more often than the queue allows (killed, out of memory): given up. */
export const STALLED: ProcessError = {
  code: 'worker_stalled',
  detail:
    'The worker creating the account stopped repeatedly (killed or out of memory). Retry it; the operators have the details.',
  domain: 'import_process',
};

/**
 * One creation run's place in the process's history: STARTED before it writes anything, then its outcome.
 * A v1 dry run is a check, like validation, and records nothing (no run is made for it).
 */
export class CreationRun {
  private startDecision: Promise<'go' | 'skip'> | null = null;

  constructor(
    private readonly events: ProcessEventLog,
    private readonly process: ProcessIdentity,
    private readonly run: RunIdentity,
    private readonly clock: () => Date,
    /** The history is known to hold CREATED at position 0 (`AccountImportProcess.history`). */
    private readonly createdFirst = false,
  ) {}

  /**
   * Decides the start (once) and records it; 'skip' when the run is not this process's to do any more. A
   * process whose history says PROCESSED goes on too ('go'): a run interrupted between recording PROCESSED
   * and marking the process imported must finish that mark (every step of a creation is idempotent).
   */
  begin(): Promise<'go' | 'skip'> {
    this.startDecision ??= this.events
      .append(
        this.process,
        (state) => {
          const decision = onStart(state, this.run.id, this.run.taskId);
          if ('start' in decision) return { event: this.started(decision.start), result: 'go' as const };
          if ('resume' in decision) return { event: null, result: 'go' as const };
          if (decision.skip === 'already_processed') return { event: null, result: 'go' as const };
          return { event: null, result: 'skip' as const };
        },
        this.clock(),
        // Most creations follow a v1 stage: their STARTED goes at position 1 without reading the history
        // (were it longer, the insert fails and the history is read).
        this.createdFirst ? { assume: afterCreated } : {},
      )
      .then(({ result, recorded }) => {
        if (recorded) this.run.onRecorded?.(recorded);
        return result;
      });
    return this.startDecision;
  }

  /** The STARTED event with who runs it: this worker, and when its job was queued. */
  private started(event: NewEvent): NewEvent {
    const queuedAt = this.run.queuedAt;
    return { ...event, worker: WORKER_NAME, ...(queuedAt ? { queuedAt: new Date(queuedAt) } : {}) };
  }

  /** Records the run's outcome (after its start); outcomes that change nothing record nothing. */
  async finish(outcome: CreationOutcome, dryRun: boolean): Promise<void> {
    const result = runOutcome(outcome, dryRun);
    if (!result) return;
    if ((await this.begin()) === 'skip' && result.kind !== 'PROCESSED') return;
    await this.record(result);
  }

  /** A run that failed for good (its job's last attempt threw): the process is not left IN_PROGRESS. */
  async fail(dryRun: boolean, error: ProcessError = FAILED): Promise<void> {
    await this.record({ kind: dryRun ? 'DRY_RUN_ERRORED' : 'ERRORED', error });
  }

  private async record(result: RunOutcome): Promise<void> {
    const { recorded } = await this.events.append(
      this.process,
      (state) => ({ event: onFinish(state, this.run.id, result), result: null }),
      this.clock(),
    );
    if (recorded) this.run.onRecorded?.(recorded);
  }
}

/** What a creation's answer means for the process's history (null: nothing to record). */
function runOutcome(outcome: CreationOutcome, dryRun: boolean): RunOutcome | null {
  if (outcome.ok) return { kind: 'PROCESSED', krakenAccountNumber: outcome.kraken_account_number };
  switch (outcome.code) {
    case 'account_import_process_already_imported':
    case 'import_process_does_not_exist':
      return null;
    case 'dry_run_rolled_back':
      return { kind: 'DRY_RUN_SUCCEEDED' };
    case 'account_failed_validation':
      return {
        kind: dryRun ? 'DRY_RUN_ERRORED' : 'ERRORED',
        error: {
          code: outcome.code,
          detail: 'The account data failed validation.',
          domain: 'import_process',
        },
        errors: outcome.errors ?? [],
      };
    default:
      return {
        kind: dryRun ? 'DRY_RUN_ERRORED' : 'ERRORED',
        error: {
          code: outcome.code,
          detail: outcome.detail ?? refusalDetail[outcome.code] ?? FAILED.detail,
          domain: 'import_process',
        },
      };
  }
}

const refusalDetail: Record<string, string> = {
  account_import_process_skipped: 'The account import process is marked to be skipped.',
  import_supplier_migration_not_ongoing: 'The import supplier is not accepting migrations.',
  operations_team_name_does_not_exist: 'The operations team does not exist.',
};
