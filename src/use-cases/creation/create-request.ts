import { isRedisUnavailable, type RedisClient } from '../../infra/redis.js';
import { DatabaseUnavailableError } from '../../infra/mongo.js';
import type { Storage } from '../../storage/index.js';
import { processKey } from '../../storage/processes/process-key.js';
import { jobId } from '../../jobs/catalog.js';
import type { CreationOutcome } from './from-process.js';
import { CreationSlots, slotMember, type AcquireResult, type ShareUse, type SlotSettings } from './slots.js';
import { PlanGate } from '../cutover/plan-gate.js';
import { planRefusal } from './plan-admission.js';

/**
 * The protocol of a create request, from the API's side: the account's concurrency slot, the attempt and job
 * id, the bounded wait for the worker's answer. The route only turns what this returns into HTTP.
 *
 * - The slot is the global limit and the per-account lock at once, taken in one atomic step in Redis before
 *   anything else, so a refusal at the limit costs next to nothing (429, not queued).
 * - Deterministic job ids: a real create is `create-<process>-<n>` where n counts accepted creates (kept in
 *   Redis, see `CreationSlots.claimAttempt`; an account's first is claimed with its slot); a queued job left
 *   behind by an earlier request is joined rather than duplicated, a finished or failed one is followed by
 *   attempt n+1 (whose worker answers "already imported" when the account exists). A job marks its attempt
 *   finished as it frees its slot (`slot.done`), before BullMQ moves it to completed, so a create right after
 *   an answer never joins the job that gave it. A dry run is tied to its request. Two claims that still raced
 *   (a slot lapsed after its lease) saw the same n and so join the same job.
 * - The slot is renewed every second while the request waits, so a Redis outage ends the wait at once.
 */

/** While a create job is in one of these states the account is IN_PROGRESS. */
export const PENDING_JOB_STATES: ReadonlySet<string> = new Set([
  'waiting',
  'active',
  'delayed',
  'prioritized',
  'waiting-children',
]);

/** What the protocol needs of the queue (the API's producers implement it). */
export type CreateQueue = {
  enqueueAndWait(
    data: {
      processId: string;
      operationsTeamId: string;
      dryRun: boolean;
      attempt: number;
      organisationId: string;
      requestId: string;
    },
    options: { jobId: string; waitMs: number; beforeRequeue?: () => Promise<void> },
  ): Promise<{ result: CreationOutcome | undefined; timedOut: boolean }>;
  jobState(id: string): Promise<string>;
};

export type CreateRequest = {
  /** The caller's organisation: whose share of the creation limit the create uses. */
  organisationId: string;
  importSupplier: string;
  externalAccountNumber: string;
  /** Resolves the team before the job is queued (null: unknown team). */
  teamId: () => Promise<string | null>;
  dryRun: boolean;
  requestId: string;
};

export type CreateRequestResult = (
  | { status: 'answered'; outcome: CreationOutcome }
  | { status: 'in_progress' | 'unknown_team' | 'redis_unavailable' }
  /** Refused at the organisation's share: try again in `retryAfterS` (see `retryAfter`). */
  | { status: 'limit_reached'; retryAfterS: number }
  /** The wait ran out; the job keeps running (its id is recorded on the process). */
  | { status: 'pending' }
) & {
  /** The organisation's part of the limit as the slot step saw it (absent: Redis could not say). */
  share?: ShareUse;
};

/** The create job a request queues or joins: its id, and its attempt (0: a dry run). */
type Job = { id: string; attempt: number };

export class CreateRequests {
  private readonly slots: CreationSlots;
  /** The suppliers' cohort plans: a create starts only when its plan admits it (see `cutover/plan-gate.ts`). */
  private readonly plans: PlanGate;

  constructor(
    private readonly redis: RedisClient,
    private readonly storage: Storage,
    private readonly queue: CreateQueue,
    private readonly settings: SlotSettings & {
      ACCOUNT_CREATION_WAIT_MS: number;
      ACCOUNT_CREATION_FAIR_WAIT_MS: number;
    },
  ) {
    this.slots = new CreationSlots(redis, settings);
    this.plans = new PlanGate(redis, settings.QUEUE_PREFIX);
  }

  /** Takes the account's slot, chooses the job (and its attempt), then waits for it (see `waitFor`). */
  async run(req: CreateRequest): Promise<CreateRequestResult> {
    const member = slotMember(req.importSupplier, req.externalAccountNumber);
    const processId = processKey(req.importSupplier, req.externalAccountNumber);
    let slot: AcquireResult;
    try {
      slot = await this.takeSlot(member, req);
    } catch {
      // silent-ok: Redis unreachable is the answer (503), and /readyz reports it
      return { status: 'redis_unavailable' };
    }
    const { share } = slot;
    if (slot.status === 'already_held') return { status: 'in_progress', share };
    if (slot.status !== 'taken') return { status: 'limit_reached', retryAfterS: retryAfter(share), share };
    return { ...(await this.inSlot(member, processId, slot, req)), share };
  }

  /**
   * The account's slot. An organisation under its share while others hold every slot waits for the next free
   * one, which its recorded ticket reserves (organisations over their share give it up), bounded by
   * `ACCOUNT_CREATION_FAIR_WAIT_MS`; one at or over its share is refused at once.
   */
  private async takeSlot(member: string, req: CreateRequest): Promise<AcquireResult> {
    const options = {
      claimFirst: !req.dryRun,
      organisationId: req.organisationId,
      ticket: `req:${req.requestId}`,
    };
    const until = Date.now() + this.settings.ACCOUNT_CREATION_FAIR_WAIT_MS;
    let slot = await this.slots.acquire(member, 'api', options);
    for (let pause = 5; slot.status === 'wait' && Date.now() < until; pause = Math.min(pause * 2, 50)) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      slot = await this.slots.acquire(member, 'api', options);
    }
    return slot;
  }

  private async inSlot(
    member: string,
    processId: string,
    slot: AcquireResult,
    req: CreateRequest,
  ): Promise<CreateRequestResult> {
    // Whether the account is staged, skipped or imported is the worker's to say (as the job's result): the
    // request path reads no process, so the queue hop costs Redis round trips only.
    let teamId: string | null;
    let job: Job | CreateRequestResult = { status: 'unknown_team' };
    // Its cohort plan admits it (the worker settles it), or refuses: paused, its canary's N, outside its window.
    const admission = req.dryRun ? null : await this.plans.admit(member).catch(() => 'unavailable' as const);
    if (admission === 'unavailable' || (admission && !admission.admitted)) {
      await this.giveBack(member);
      if (admission === 'unavailable') return { status: 'redis_unavailable' };
      return { status: 'answered', outcome: planRefusal(req.importSupplier, admission) };
    }
    try {
      teamId = await req.teamId();
      if (teamId)
        job = slot.claimed
          ? { id: createJobId(processId, slot.attempt), attempt: slot.attempt }
          : await this.chooseJob(member, processId, slot, req);
    } catch (err) {
      await this.giveBack(member, admission !== null);
      throw err;
    }
    // No team, or the account's create is already running (a dry run), or Redis failed: not queued.
    if ('status' in job || !teamId) {
      await this.giveBack(member, admission !== null);
      return 'status' in job ? job : { status: 'unknown_team' };
    }
    return this.waitFor(member, { processId, operationsTeamId: teamId, job, req });
  }

  /**
   * Queues the job (or joins it) and waits, bounded, for its answer while renewing the slot; a wait that runs
   * out leaves the job's id on the process for the status endpoint.
   */
  private async waitFor(
    member: string,
    {
      processId,
      operationsTeamId,
      job,
      req,
    }: { processId: string; operationsTeamId: string; job: Job; req: CreateRequest },
  ): Promise<CreateRequestResult> {
    const { attempt } = job;
    let onLost: (err: unknown) => void = () => undefined;
    const lost = new Promise<never>((_, reject) => (onLost = reject));
    const stop = this.slots.keepAlive(member, (err) => onLost(err), 1_000);
    const waiting = this.queue.enqueueAndWait(
      {
        processId,
        operationsTeamId,
        dryRun: req.dryRun,
        attempt,
        organisationId: req.organisationId,
        requestId: req.requestId,
      },
      {
        jobId: job.id,
        waitMs: this.settings.ACCOUNT_CREATION_WAIT_MS,
        // A job lost in a failover is queued again by the wait; its attempt may have been lost with it.
        beforeRequeue: attempt > 0 ? () => this.slots.restoreAttempt(member, attempt) : undefined,
      },
    );
    waiting.catch(() => undefined); // silent-ok: the race below reports the wait's failure (this: a late one)
    let settled: Awaited<typeof waiting>;
    try {
      settled = await Promise.race([waiting, lost]);
    } catch (err) {
      // The job was put back to wait out a database outage: it takes the slot again when it runs, and
      // meanwhile the client's retry joins it instead of meeting this request's slot.
      if (err instanceof DatabaseUnavailableError) {
        await this.giveBack(member);
        throw err;
      }
      // A lost connection (or a job that failed for good): the job, if queued, is picked up again later.
      if (isRedisUnavailable(err)) return { status: 'redis_unavailable' };
      const reachable = await this.redis.ping().then(
        () => true,
        () => false,
      );
      if (!reachable) return { status: 'redis_unavailable' };
      throw err;
    } finally {
      stop();
    }
    if (settled.timedOut || settled.result === undefined) {
      // The slot lapses once nobody renews it: from then on the status endpoint finds the queued job by this id.
      await this.storage.processes.recordCreationJob(processId, job.id);
      return { status: 'pending' };
    }
    return { status: 'answered', outcome: settled.result };
  }

  /**
   * Gives this request's slot back. When Redis cannot take it, the slot lapses after its lease: the failure
   * that brought the request here is what its caller hears.
   */
  private async giveBack(member: string, admitted = false): Promise<void> {
    await this.slots.release(member).catch(() => undefined); // silent-ok: the slot lapses after its lease
    if (!admitted) return;
    // An admission left behind only holds one canary place back until the account's next creation.
    await this.plans.settle(member, 'none').catch(() => undefined); // silent-ok: holds one canary place at most
  }

  private async chooseJob(
    member: string,
    processId: string,
    slot: { attempt: number; done: number },
    req: CreateRequest,
  ): Promise<Job | CreateRequestResult> {
    const { attempt } = slot;
    try {
      if (attempt > slot.done) {
        const state = await this.queue.jobState(createJobId(processId, attempt));
        if (PENDING_JOB_STATES.has(state)) {
          if (req.dryRun) return { status: 'in_progress' };
          return { id: createJobId(processId, attempt), attempt };
        }
      }
      if (req.dryRun)
        return { id: jobId('dryrun', encodeURIComponent(processId), req.requestId), attempt: 0 };
      const next = await this.slots.claimAttempt(member, attempt);
      return { id: createJobId(processId, next), attempt: next };
    } catch {
      // silent-ok: Redis unreachable is the answer (503), and /readyz reports it
      return { status: 'redis_unavailable' };
    }
  }
}

/**
 * When a create refused at its organisation's share may expect a slot, in whole seconds (at least 1): the
 * organisation's slots must come down below its share, one more for each of its creations already waiting,
 * and its slots free at about one per mean hold time each.
 */
export function retryAfter(share: ShareUse): number {
  const ahead = Math.max(0, share.inUse - Math.floor(share.share)) + share.waiting + 1;
  const seconds = (ahead * share.holdMs) / Math.max(1, share.inUse) / 1000;
  return Math.max(1, Math.ceil(seconds));
}

/** The key holds the supplier's external number, which may contain ':' (not allowed in job ids). */
export function createJobId(processId: string, attempt: number): string {
  return jobId('create', encodeURIComponent(processId), String(attempt));
}
