import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import { processKey } from '../../storage/processes/process-key.js';
import { withSlotCommands, type SlotCommands } from './slot-scripts.js';

/**
 * The global limit on accounts being created at once, shared by every API pod and worker, and fairly among
 * the organisations that have work (see `slot-scripts.ts` for the keys and the scripts).
 *
 * One Redis sorted set per deployment (per queue prefix): member = the account's key (`slotMember`), score = the time
 * (Redis server clock, ms) at which the slot lapses. Holders renew their slot while they work (the API while
 * it waits for the job, the worker while it runs it), so a crashed holder's slot lapses on its own after
 * the lease. Every decision is one Lua script, so "count, compare, add" is atomic across processes.
 * The member being the account's key also makes the set the lock against a second create of the same account.
 *
 * The fair share: each organisation holding or waiting for a slot gets the limit times its weight over the
 * active weights. Under its share it is never refused because others hold the slots: it waits (a v1 create in
 * its API pod, a v2 task parked in its organisation's line), and organisations over their share give up the
 * next free slots until it has its share. A lone organisation has the whole limit (work-conserving).
 */
const statusOf = (status: number): AcquireResult['status'] =>
  status === 1 ? 'taken' : status === 0 ? 'limit_reached' : status === 2 ? 'wait' : 'already_held';

/** The slot (and lock) of one account: its process key, known before any lookup. */
export function slotMember(importSupplier: string, externalAccountNumber: string): string {
  return processKey(importSupplier, externalAccountNumber);
}

/** An organisation's part of the limit, as a create answer reports it (headers) and the progress shows it. */
export type ShareUse = {
  /** Slots the organisation holds (after this call, when it took one). */
  inUse: number;
  /** Its share now: the limit times its weight over the active organisations' weights (0: no limit). */
  share: number;
  /** Its creations waiting for a slot (v1 creates in API pods, parked v2 tasks). */
  waiting: number;
  /** The mean time a slot is held, in ms (0 before the first finished creation). */
  holdMs: number;
};

export type AcquireResult = {
  /**
   * `taken` (or renewed); `limit_reached`: the organisation is at or over its share (the whole limit when
   * alone); `wait`: it is under its share while others hold the slots (its ticket, if given, is recorded, so
   * the next free slot is its); `already_held` (api mode).
   */
  status: 'taken' | 'limit_reached' | 'wait' | 'already_held';
  inFlight: number;
  /** API mode, when taken: the account's create attempt, and whether this call claimed it (the first). */
  attempt: number;
  claimed: boolean;
  /** API mode, when taken and not claimed: the last attempt whose job finished (see `finish`). */
  done: number;
  share: ShareUse;
};

export type SlotSettings = {
  QUEUE_PREFIX: string;
  ACCOUNT_CREATION_CONCURRENCY: number;
  ACCOUNT_CREATION_SLOT_LEASE_MS: number;
  /** Absent: on. */
  ACCOUNT_CREATION_FAIR_SHARE?: boolean;
};

/** The organisation of slots taken before organisations were recorded (jobs queued before the upgrade). */
export const UNKNOWN_ORGANISATION = '-';

/** How long a v1 create's ticket lives without being renewed (its API pod renews it while it waits). */
export const ASK_TICKET_MS = 1_000;

/** How long an organisation's task rank lives without a new task (its next cohort then starts at rank 1). */
const TASK_RANK_MS = 3_600_000;
/** BullMQ's highest job priority (2^21 - 1); ranks beyond share it (then in the order they were scheduled). */
const MAX_PRIORITY = 2_097_151;

export class CreationSlots {
  private readonly redis: RedisClient & SlotCommands;
  private readonly keys: ReturnType<typeof redisKeys>['creationSlots'];
  readonly limit: number;
  readonly leaseMs: number;
  readonly fair: boolean;

  constructor(redis: RedisClient, settings: SlotSettings) {
    this.redis = withSlotCommands(redis);
    this.keys = redisKeys(settings.QUEUE_PREFIX).creationSlots;
    this.limit = settings.ACCOUNT_CREATION_CONCURRENCY;
    this.leaseMs = settings.ACCOUNT_CREATION_SLOT_LEASE_MS;
    this.fair = settings.ACCOUNT_CREATION_FAIR_SHARE !== false;
  }

  private get key(): string {
    return this.keys.slots;
  }

  /**
   * `api`: a new creation; refused when the account already holds a slot (a create is running). With
   * `claimFirst`, an account that never had a create attempt claims its first in the same step.
   * `worker`: the job's own slot; renewed when held, else taken again if the limit (and the shares) allow.
   * `ticket`: who asks (api: `req:<request id>`, recorded when told to wait; worker: a parked task's
   * `job:<id>`, dropped once it has its slot).
   */
  async acquire(
    member: string,
    mode: 'api' | 'worker',
    options: { claimFirst?: boolean; organisationId?: string; ticket?: string } = {},
  ): Promise<AcquireResult> {
    const k = this.keys;
    const reply = await this.redis.slotAcquire(
      k.slots,
      k.peak,
      k.attempts,
      k.done,
      k.slotOrg,
      k.orgUse,
      k.weights,
      k.waiting,
      k.orgWaiting,
      k.hold,
      member,
      this.limit,
      this.leaseMs,
      mode,
      options.claimFirst ? '1' : '0',
      options.organisationId || UNKNOWN_ORGANISATION,
      this.fair ? '1' : '0',
      options.ticket ?? '',
      ASK_TICKET_MS,
    );
    const [status, inFlight, attempt, claimed, done, inUse, shareMilli, waiting, holdMs] = reply.map(Number);
    return {
      status: statusOf(status!),
      inFlight: inFlight!,
      attempt: attempt!,
      claimed: claimed === 1,
      done: done!,
      share: { inUse: inUse!, share: shareMilli! / 1000, waiting: waiting!, holdMs: holdMs! },
    };
  }

  async renew(member: string): Promise<boolean> {
    return (await this.redis.slotRenew(this.key, member, this.leaseMs)) === 1;
  }

  /** Gives a slot back without ending an attempt. Returns how many organisations have parked tasks. */
  async release(member: string): Promise<number> {
    return this.finish(member, -1);
  }

  /**
   * A job's end: frees its slot and records its attempt (0 for a dry run) as finished. `via` sends the command
   * on another connection, to order it with that connection's commands. Returns how many organisations have
   * parked tasks (the caller then hands the slot to one, see `fair-dispatch.ts`).
   */
  async finish(member: string, attempt: number, via: RedisClient = this.redis): Promise<number> {
    const k = this.keys;
    return withSlotCommands(via).slotFinish(
      k.slots,
      k.done,
      k.slotOrg,
      k.orgUse,
      k.hold,
      k.orgParked,
      member,
      attempt,
    );
  }

  async isHeld(member: string): Promise<boolean> {
    return (await this.redis.slotHeld(this.key, member)) === 1;
  }

  async inFlight(): Promise<number> {
    return this.redis.slotInFlight(this.key);
  }

  /** An organisation's part of the limit now (nothing is taken). */
  async usage(organisationId: string): Promise<ShareUse & { inFlight: number }> {
    const k = this.keys;
    const [inUse, shareMilli, inFlight, waiting] = (
      await this.redis.slotUsage(
        k.slots,
        k.slotOrg,
        k.orgUse,
        k.weights,
        k.waiting,
        k.orgWaiting,
        organisationId,
        this.limit,
        this.fair ? '1' : '0',
      )
    ).map(Number);
    const holdMs = Number((await this.redis.get(k.hold)) ?? 0);
    return { inUse: inUse!, share: shareMilli! / 1000, inFlight: inFlight!, waiting: waiting!, holdMs };
  }

  /** Puts a v2 task in its organisation's line (keeping its place, `since`), its ticket living `ttlMs`. */
  async park(organisationId: string, jobId: string, since: number, ttlMs: number): Promise<void> {
    const k = this.keys;
    await this.redis.slotPark(
      k.parked(organisationId),
      k.waiting,
      k.orgWaiting,
      k.orgParked,
      organisationId,
      jobId,
      since,
      ttlMs,
    );
  }

  /** Takes a task out of its organisation's line: `jobId`, or the first in line (returned; null: none). */
  async unpark(organisationId: string, jobId = ''): Promise<string | null> {
    const k = this.keys;
    return this.redis.slotUnpark(
      k.parked(organisationId),
      k.waiting,
      k.orgWaiting,
      k.orgParked,
      organisationId,
      jobId,
    );
  }

  /**
   * A parked task's place in its organisation's line: how many of the organisation's tasks wait before it
   * (null: not parked). Read only (an account's timeline).
   */
  async linePlace(organisationId: string, jobId: string): Promise<number | null> {
    return this.redis.zrank(this.keys.parked(organisationId || UNKNOWN_ORGANISATION), jobId);
  }

  /** The organisation whose parked task goes next (by weight in turn); null: nothing is parked. */
  async nextParkedOrganisation(): Promise<string | null> {
    const k = this.keys;
    return this.redis.slotNextOrg(k.orgParked, k.orgUse, k.weights, this.fair ? '1' : '0');
  }

  /** Sets (or, with 1, clears) an organisation's weight as the scripts read it. */
  async setWeights(weights: ReadonlyMap<string, number>): Promise<void> {
    const k = this.keys;
    const multi = this.redis.multi().del(k.weights);
    for (const [org, weight] of weights) if (weight !== 1) multi.hset(k.weights, org, weight);
    await multi.exec();
  }

  /** The BullMQ priority of the organisation's next v2 task (see `TASK_PRIORITY`). */
  async taskPriority(organisationId: string): Promise<number> {
    const k = this.keys;
    const org = organisationId || UNKNOWN_ORGANISATION;
    return this.redis.slotTaskPriority(k.taskRank(org), k.weights, org, TASK_RANK_MS, MAX_PRIORITY);
  }

  /**
   * Moves the account to the attempt after `seen`, unless another claim already did; returns the attempt.
   * Attempts count the real (non-dry-run) creates accepted for an account and are part of each create job's
   * deterministic id. They are kept in Redis next to the slot and the jobs themselves (never expiring, so an
   * id is never reused while a job keeps it), so choosing the id costs no database round trip.
   */
  async claimAttempt(member: string, seen: number): Promise<number> {
    return this.redis.slotClaimAttempt(this.keys.attempts, member, seen);
  }

  /**
   * Makes sure the counter is at least `attempt`: the job of that attempt is being queued again after a
   * failover lost it, maybe with the claim that chose its id, so a later create must not claim the id again.
   */
  async restoreAttempt(member: string, attempt: number): Promise<void> {
    await this.redis.slotRestoreAttempt(this.keys.attempts, member, attempt);
  }

  /** The highest number of slots ever held at once (for operators and the scale-out test). */
  async peak(): Promise<number> {
    return Number((await this.redis.get(this.keys.peak)) ?? 0);
  }

  /**
   * Renews the slot every third of the lease until stopped. `onLost` is told when renewing fails (Redis
   * unreachable), so a waiting request can answer at once instead of hanging.
   */
  keepAlive(member: string, onLost?: (err: unknown) => void, everyMs = this.leaseMs / 3): () => void {
    const timer = setInterval(
      () => {
        this.renew(member).catch((err: unknown) => onLost?.(err));
      },
      Math.max(200, Math.floor(Math.min(everyMs, this.leaseMs / 3))),
    );
    timer.unref();
    return () => clearInterval(timer);
  }
}
