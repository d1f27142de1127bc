import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { createAccount, type CreationOutcome } from '../use-cases/creation/from-process.js';
import { CreationSlots } from '../use-cases/creation/slots.js';
import { UnknownRegionError } from '../domain/region/index.js';
import { isDatabaseUnavailable } from '../infra/mongo.js';
import { jobCatalog, jobId, retention, type JobData } from '../jobs/catalog.js';
import { STALLED, CreationRun } from '../use-cases/creation/runs.js';
import type { RecordedEvent } from '../storage/processes/process-event-records.js';
import { relayEvents, type RelayOptions } from '../use-cases/webhooks/relay.js';
import type { WorkerContext } from './context.js';
import { handOn } from './fair-slots.js';
import { settleCreation } from './plan-gate.js';

/**
 * Runs one account creation under its concurrency slot. The API took the slot when it accepted the
 * request; the worker renews it while it works (or takes it again when it lapsed, e.g. after the API gave
 * up waiting), and waits in the delayed set when the limit is full, so the limit also binds workers.
 */
export async function createAccountJob(
  data: JobData<'create-account'>,
  job: Job,
  ctx: WorkerContext,
): Promise<CreationOutcome> {
  const slots = new CreationSlots(ctx.redis, ctx.config);
  // The process id is its natural key, which is also the account's slot member (see `slotMember`).
  const member = data.processId;
  // Checked alongside creation's reads, awaited before its first write: the slot is almost always still the
  // API's (renewing it costs a round trip that the reads hide).
  const slot = slots.acquire(member, 'worker', { organisationId: data.organisationId });
  // silent-ok: awaited before the first write (its failure fails the run) and again at the end
  slot.catch(() => undefined);
  let stop = () => {};
  let end: SlotEnd = 'kept';
  const recorded: RecordedEvent[] = [];
  let ended: Parameters<typeof settleCreation>[3] = 'failed';
  const run = {
    id: job.id!,
    taskId: null,
    queuedAt: job.timestamp,
    onRecorded: (e: RecordedEvent) => void recorded.push(e),
  };
  try {
    const outcome = await createAccount(
      { storage: ctx.storage, config: ctx.config, clock: ctx.clock },
      {
        processId: data.processId,
        operationsTeamId: data.operationsTeamId,
        dryRun: data.dryRun,
        jobId: job.id!,
        run,
        beforeWrites: async () => {
          if ((await slot).status !== 'taken') {
            await job.moveToDelayed(Date.now() + 500 + Math.floor(Math.random() * 500), job.token);
            throw new DelayedError();
          }
          stop = slots.keepAlive(member, (err) => ctx.log.warn({ err }, 'could not renew creation slot'));
        },
      },
    );
    end = 'finished';
    ended = outcome;
    if (outcome.ok && outcome.send_email) await queueMigrationEmail(ctx, outcome.account_id, data.requestId);
    ctx.log.info(
      { ok: outcome.ok, code: outcome.ok ? undefined : outcome.code },
      'account creation finished',
    );
    return outcome;
  } catch (err) {
    if (err instanceof DelayedError) throw err;
    if (end === 'kept') end = failureEnd(err, job);
    // A run that will not be retried leaves the process ERRORED, not IN_PROGRESS, in its history.
    if (end === 'finished' && !data.dryRun) await recordFailure(ctx, data.processId, run, false);
    if (err instanceof UnknownRegionError) throw new UnrecoverableError(err.message);
    throw err;
  } finally {
    void relayEvents(ctx.queue('webhooks'), recorded, data.requestId, relayOptions(ctx));
    stop();
    await settleSlot(ctx, slots, data, slot, end);
    // Its cohort plan counts it (admitted by the API); a dry run was never admitted.
    if (end === 'finished' && !data.dryRun)
      await settleCreation(ctx, data.processId, data.organisationId, ended, data.requestId);
  }
}

/**
 * What a run does with its slot at its end: `finished` (it answered, or failed for good: the slot is given back
 * and the attempt is over), `put_back` (a database outage: the job waits it out, see the runtime, without its
 * slot, so the client's retry joins it), or `kept` (a failure that will be retried keeps its slot, which
 * lapses on its own).
 */
type SlotEnd = 'finished' | 'put_back' | 'kept';

/** A failed run's end (see `SlotEnd`). */
function failureEnd(err: unknown, job: Job): SlotEnd {
  // The supplier's region has no validation profile: configuration, which no retry mends.
  const hopeless = err instanceof UnknownRegionError || err instanceof UnrecoverableError;
  if (!hopeless && isDatabaseUnavailable(err)) return 'put_back';
  if (hopeless || job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) return 'finished';
  return 'kept';
}

async function settleSlot(
  ctx: WorkerContext,
  slots: CreationSlots,
  data: JobData<'create-account'>,
  slot: Promise<unknown>,
  end: SlotEnd,
): Promise<void> {
  // A refusal can come before the check: let it land first, or the release could precede it.
  // silent-ok: a failed check has failed the run already
  await slot.catch(() => undefined);
  // Not awaited: sent on the connection BullMQ completes the job on (and the result is published on), so
  // Redis frees the slot and marks the attempt finished before anyone can learn the job's result (a client's
  // next create never meets its own slot, nor joins this job), without a round trip. Should it fail (Redis
  // down), the slot lapses after its lease and the job's state tells the attempt is over.
  // silent-ok: as said, a slot Redis could not free lapses after its lease
  if (end === 'finished')
    void slots
      .finish(data.processId, data.attempt, ctx.jobRedis)
      .then((parked) => handOn(ctx, parked))
      .catch(() => undefined);
  else if (end === 'put_back')
    await slots
      .release(data.processId)
      .then((parked) => handOn(ctx, parked))
      .catch(() => undefined);
}

/** A worker's relay settles its events itself: dispatched in this process, with no dispatch job. */
export function relayOptions(ctx: WorkerContext): RelayOptions {
  return { store: ctx.storage.webhooks, dispatch: ctx.webhooks };
}

/** One e-mail job per account: its id is the account's, so a retried creation cannot add a second. */
export async function queueMigrationEmail(ctx: WorkerContext, accountId: string, requestId: string) {
  const spec = jobCatalog['send-migration-email'];
  await ctx
    .queue(spec.queue)
    .add(
      'send-migration-email',
      { accountId, requestId },
      { ...spec.options, ...retention, jobId: jobId('email', accountId) },
    );
}

/** Records a run's final failure in the process's history (best effort: the job's failure is what counts). */
export async function recordFailure(
  ctx: WorkerContext,
  processId: string,
  run: ConstructorParameters<typeof CreationRun>[2],
  dryRun: boolean,
  error?: Parameters<CreationRun['fail']>[1],
): Promise<void> {
  try {
    const process = await ctx.storage.processes.find(processId);
    if (!process) return;
    const identity = {
      key: process._id,
      organisationId: process.organisationId,
      importSupplier: process.importSupplier,
      externalAccountNumber: process.externalAccountNumber,
    };
    await new CreationRun(ctx.storage.events, identity, run, ctx.clock).fail(dryRun, error);
  } catch (err) {
    ctx.log.warn({ err: (err as Error).message }, 'could not record the failed run');
  }
}

/**
 * A creation job BullMQ failed because its worker stopped under it too often (`maxStalledCount`): no
 * processor's catch ran, so the run is recorded ERRORED `worker_stalled` here (from the worker that found it
 * stalled), and the process does not stay IN_PROGRESS, refusing schedules and cancels, for good. Only the run
 * still in progress under this job's id is ended (a later run, or a finished one, is left as it is).
 */
export async function recordStalledCreation(
  ctx: WorkerContext,
  job: Pick<Job, 'id' | 'name' | 'data'>,
): Promise<void> {
  const data = job.data as { processId?: unknown; dryRun?: unknown; taskId?: unknown; attempt?: unknown };
  if (typeof data.processId !== 'string') return;
  const taskId = typeof data.taskId === 'number' ? data.taskId : null;
  const state = await ctx.storage.events.state(data.processId);
  const dryRun = taskId === null ? data.dryRun === true : state.task?.dryRun === true;
  await recordFailure(ctx, data.processId, { id: job.id!, taskId }, dryRun, STALLED);
  const org = (job.data as { organisationId?: string }).organisationId;
  if (!dryRun) await settleCreation(ctx, data.processId, org, 'failed', 'stalled');
  // Its slot was the dead worker's: freed now (as a finished job frees it), not when its lease lapses.
  const attempt = taskId === null && typeof data.attempt === 'number' ? data.attempt : 0;
  handOn(ctx, await new CreationSlots(ctx.redis, ctx.config).finish(data.processId, attempt));
}
