import { DelayedError, type Job } from 'bullmq';
import { createAccount } from '../use-cases/creation/from-process.js';
import { CreationSlots, UNKNOWN_ORGANISATION } from '../use-cases/creation/slots.js';
import { onWindowExpired, type ProcessState, type Task } from '../domain/import-process/state.js';
import type { ProcessRow } from '../storage/processes/import-processes.js';
import type { ProcessEventLog } from '../storage/processes/process-events.js';
import type { RecordedEvent } from '../storage/processes/process-event-records.js';
import { relayEvents } from '../use-cases/webhooks/relay.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from './context.js';
import { queueMigrationEmail, recordFailure, relayOptions } from './create-account.js';
import { handOn } from './fair-slots.js';
import { admitTask, settleCreation } from './plan-gate.js';

/** How often a task whose SCHEDULED event is not there yet looks again before it gives the position up. */
const MISSING_EVENT_RETRY_MS = 1_000;
const MISSING_EVENT_TRIES = 5;
/**
 * A task parked in its organisation's line for a slot is woken by whoever frees one (`fair-slots.ts`); without
 * that hand-over (lost, or its worker died) it wakes on its own after this, plus up to as much again (spread).
 */
const PARK_FALLBACK_MS = 30_000;
/** How much longer than its fallback a parked task's ticket lives (it renews it when it parks again). */
const PARK_GRACE_MS = 5_000;

/**
 * A v2 scheduled creation (`POST /v2/data-import/accounts/`): a delayed job on the creation queue, due when
 * its window starts. It runs only while it is the task the process waits for, takes a slot of the same
 * global creation limit as v1 creates (waiting for one, never refused), and ends ERRORED
 * `schedule_window_expired` when it cannot start before its window ends.
 *
 * The schedule queues the job before it records the SCHEDULED event (so a recorded task always has its job);
 * a job that finds no event at its position waits a little for it, then fills the position with a VOID entry:
 * a schedule still on its way then loses its insert and records its task at the next position, with a job of
 * its own. Nothing rests on the timing: whichever insert wins, exactly one of the two stands.
 */
export async function runImportTaskJob(
  data: JobData<'run-import-task'>,
  job: Job,
  ctx: WorkerContext,
): Promise<unknown> {
  try {
    return await runTask(data, job, ctx);
  } catch (err) {
    if (err instanceof NoProcess) return { ran: false, reason: 'no_process' };
    throw err;
  }
}

/** A task whose process does not exist (found on a path that needed it before the creation). */
class NoProcess extends Error {}

/** One run of a task's job: its data, its job, the context, and what it learns and records on the way. */
type TaskRun = {
  data: JobData<'run-import-task'>;
  job: Job;
  ctx: WorkerContext;
  /**
   * The process, read at most once and only on the rare paths that need it before the slot (a task whose
   * event is missing, an expired window, a resumed run); the usual one leaves the read to the creation, which
   * makes it while holding the slot (the read that decides).
   */
  process: () => Promise<ProcessRow | null>;
  /** The events this run recorded, relayed to the webhooks when it ends. */
  recorded: RecordedEvent[];
  /** Whether this run holds the task's creation slot. */
  held: boolean;
};

async function runTask(data: JobData<'run-import-task'>, job: Job, ctx: WorkerContext): Promise<unknown> {
  let read: Promise<ProcessRow | null> | null = null;
  const run: TaskRun = {
    data,
    job,
    ctx,
    process: () => (read ??= ctx.storage.processes.find(data.processId)),
    recorded: [],
    held: false,
  };
  // The same global limit as v1 creates, shared by organisation: a full share parks the task in its
  // organisation's line (it never fails for it). Inside the window its job was scheduled with, the slot is
  // asked for first: a task that must wait then costs no read of its history.
  const slots = new CreationSlots(ctx.redis, ctx.config);
  const now = ctx.clock().getTime();
  if (
    data.windowStart !== undefined &&
    data.windowEnd !== undefined &&
    now >= data.windowStart &&
    now <= data.windowEnd
  )
    await takeSlot(run, slots, data.windowEnd, false);
  let creating = false;
  try {
    const state = await stateAtTask(run);
    if (!state) return { ran: false, reason: 'not_scheduled' };
    // The task runs only while it is the one the process waits for (or it is resuming its own start).
    const task = state.task;
    const resuming = await isResuming(run, state);
    if (!task || task.id !== data.taskId || (state.status !== 'PENDING' && !resuming))
      return { ran: false, reason: 'superseded' };
    if (!resuming) {
      const expired = await awaitWindow(run, task);
      if (expired) return expired;
    }
    await takeSlot(run, slots, Date.parse(task.windowEnd), resuming);
    // The supplier's cohort plan (paused, its canary, its window) may hold the task back: it waits, slot freed.
    if (!resuming && !task.dryRun) await admitTask(ctx, job, data.processId, Date.parse(task.windowEnd));
    creating = true;
    return await createInSlot(run, slots, task);
  } finally {
    // A slot taken for a run that does not create (superseded, delayed) goes to whoever waits next.
    if (run.held && !creating)
      handOn(
        ctx,
        await slots.release(data.processId).catch((err: Error) => {
          ctx.log.warn(
            { err: err.message },
            'could not give a creation slot back (it lapses after its lease)',
          );
          return 0;
        }),
      );
  }
}

/** Puts the job back in the delayed set until `until` (the processor then ends with `DelayedError`). */
async function delay(job: Job, until: number): Promise<never> {
  await job.moveToDelayed(until, job.token);
  throw new DelayedError();
}

/**
 * The history up to now: the task's own SCHEDULED event is at its position, unless the schedule has not
 * written it (yet: the job waits a little for it; or ever: null, once the position is filled).
 */
async function stateAtTask(run: TaskRun): Promise<ProcessState | null> {
  const { data, job, ctx } = run;
  const events = ctx.storage.events;
  const tries = (job.data as { waits?: number }).waits ?? 0;
  const first = await firstState(events, data, tries > 0);
  // Assumed (nothing after the task's own entry) only while its window is open: every decision taken on it
  // below is then to go on, which the insert of STARTED proves or refutes. Outside the window the history is
  // read as it is: an expiry must not be decided on an assumption (a run of this same job may have started
  // before its worker died, and must finish), nor a wait for the window of a task cancelled since.
  const state =
    first.assumed && !windowOpen(first.state, ctx.clock().getTime())
      ? await events.state(data.processId)
      : first.state;
  if (state.seq >= data.taskId) return state;
  if (tries < MISSING_EVENT_TRIES) {
    await job.updateData({ ...data, waits: tries + 1 });
    return delay(job, Date.now() + MISSING_EVENT_RETRY_MS);
  }
  const last = await events.state(data.processId);
  // Still not there: the schedule gave up between queueing this job and recording its task. The position
  // is filled so that a schedule still on its way records its task after it (with a job of its own).
  if (last.seq < data.taskId && (await events.voidPosition(await identity(run), data.taskId, ctx.clock())))
    return null;
  return events.state(data.processId);
}

/**
 * Resuming: its own start (a crash after STARTED), or its own PROCESSED whose process was not marked
 * imported yet (a crash between the two): the creation runs again and completes what is missing.
 */
async function isResuming(run: TaskRun, state: ProcessState): Promise<boolean> {
  return (
    (state.status === 'IN_PROGRESS' && state.run === run.job.id) ||
    (state.status === 'PROCESSED' &&
      state.task?.id === run.data.taskId &&
      !(await run.process())?.krakenAccountNumber)
  );
}

/**
 * A task that has not started waits for its window to open, and one whose window has closed ends ERRORED
 * `schedule_window_expired` (its outcome returned); null: the window is open.
 */
async function awaitWindow(run: TaskRun, task: Task): Promise<{ ran: false; reason: string } | null> {
  const { data, ctx } = run;
  const now = ctx.clock().getTime();
  if (now < Date.parse(task.windowStart)) return delay(run.job, Date.parse(task.windowStart));
  if (now <= Date.parse(task.windowEnd)) return null;
  const expired = await ctx.storage.events.append(
    await identity(run),
    (s) => ({ event: onWindowExpired(s, data.taskId), result: null }),
    ctx.clock(),
  );
  if (expired.recorded) run.recorded.push(expired.recorded);
  await relay(run);
  return { ran: false, reason: 'schedule_window_expired' };
}

/**
 * The task's creation slot (renewed when this run holds it already). Refused, the task parks in its
 * organisation's line (its place kept from its first wait) and sleeps in the delayed set until a freed slot
 * wakes it, or its fallback (no later than its window's end: the next run then records the expiry).
 * The job is delayed before it is parked, so a hand-over always finds it delayed.
 */
async function takeSlot(
  run: TaskRun,
  slots: CreationSlots,
  windowEnd: number,
  resuming: boolean,
): Promise<void> {
  const { data, job } = run;
  const organisation = data.organisationId ?? UNKNOWN_ORGANISATION;
  const id = job.id!;
  const slot = await slots.acquire(data.processId, 'worker', {
    organisationId: organisation,
    ticket: `job:${id}`,
  });
  if (slot.status === 'taken') {
    if (!run.held && data.parkedAt !== undefined) await slots.unpark(organisation, id);
    run.held = true;
    return;
  }
  const now = Date.now();
  const since = data.parkedAt ?? now;
  if (data.parkedAt === undefined) await job.updateData({ ...data, parkedAt: since });
  const fallback = now + PARK_FALLBACK_MS + Math.floor(Math.random() * PARK_FALLBACK_MS);
  const wake = resuming ? fallback : Math.max(now + 1, Math.min(fallback, windowEnd + 1));
  await job.moveToDelayed(wake, job.token);
  await slots.park(organisation, id, since, wake - now + PARK_GRACE_MS);
  throw new DelayedError();
}

/** The creation itself, under the slot (renewed while it runs, freed once the run is over for good). */
async function createInSlot(run: TaskRun, slots: CreationSlots, task: Task): Promise<unknown> {
  const { data, job, ctx } = run;
  const key = data.processId;
  const stop = slots.keepAlive(key, (err) => ctx.log.warn({ err }, 'could not renew creation slot'));
  const runIdentity = {
    id: job.id!,
    taskId: data.taskId,
    queuedAt: job.timestamp,
    onRecorded: (e: RecordedEvent) => void run.recorded.push(e),
  };
  let finished = false;
  let ended: Parameters<typeof settleCreation>[3] = 'failed';
  try {
    const outcome = await createAccount(
      { storage: ctx.storage, config: ctx.config, clock: ctx.clock },
      {
        processId: key,
        operationsTeamId: task.operationsTeamId,
        dryRun: task.dryRun,
        jobId: job.id!,
        run: runIdentity,
        payloadHash: task.payloadHash,
      },
    );
    finished = true;
    ended = outcome;
    // Found replaced or cancelled when its start was recorded (the history had moved past an assumed head).
    if (!outcome.ok && outcome.code === 'task_superseded') return { ran: false, reason: 'superseded' };
    if (outcome.ok && outcome.send_email) await queueMigrationEmail(ctx, outcome.account_id, data.requestId);
    ctx.log.info(
      { ok: outcome.ok, code: outcome.ok ? undefined : outcome.code, task: data.taskId },
      'scheduled task finished',
    );
    return outcome;
  } catch (err) {
    if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
      finished = true;
      await recordFailure(ctx, key, runIdentity, task.dryRun);
    }
    throw err;
  } finally {
    stop();
    if (finished) {
      run.held = false;
      // silent-ok: a slot Redis could not free lapses after its lease
      handOn(ctx, await slots.finish(key, 0).catch(() => 0));
      if (!task.dryRun) await settleCreation(ctx, key, data.organisationId, ended, data.requestId);
    }
    await relay(run);
  }
}

/** The process's identity, for the events a task records before its creation (no process: `NoProcess`). */
async function identity(run: TaskRun) {
  const process = await run.process();
  if (!process) throw new NoProcess();
  return {
    key: run.data.processId,
    organisationId: process.organisationId,
    importSupplier: process.importSupplier,
    externalAccountNumber: process.externalAccountNumber,
  };
}

/** Hands what the run recorded to the webhooks. */
function relay(run: TaskRun): Promise<void> {
  return relayEvents(run.ctx.queue('webhooks'), run.recorded, run.data.requestId, relayOptions(run.ctx));
}

/** Whether the window of the task the process waits for is open at `now`. */
function windowOpen(state: ProcessState, now: number): boolean {
  return !!state.task && now >= Date.parse(state.task.windowStart) && now <= Date.parse(state.task.windowEnd);
}

/**
 * The task's first read of its process's state. When its schedule found the history before the task fresh,
 * only the task's own entry is read: a SCHEDULED there is the task (its id is its position), and the state
 * after it owes nothing else to what came before. That holds whichever schedule won the position: every
 * schedule that queued this job decided on the same, unchangeable, history before it. Nothing after the
 * entry is assumed (`assumed`): the usual case, which the STARTED insert at the next position proves (a
 * cancel or a replacing schedule there makes it fail, and the creation then reads on and stops). Otherwise
 * (no SCHEDULED there, a job queued by an older deployment, a task that already waited for its event) the
 * whole history is read, and the checks below decide as they always did.
 */
async function firstState(
  events: ProcessEventLog,
  data: JobData<'run-import-task'>,
  waited: boolean,
): Promise<{ state: ProcessState; assumed: boolean }> {
  const fromTask =
    data.freshBefore && !waited ? await events.stateFromTask(data.processId, data.taskId, true) : null;
  return fromTask
    ? { state: fromTask, assumed: true }
    : { state: await events.state(data.processId), assumed: false };
}
