import type { Config } from '../../config.js';
import type { WebhookFleetState } from './fleet-state.js';

/** How long a delivery waits in its process for one of its endpoint's places before it waits as a delayed job. */
export const PLACE_WAIT_MS = 1_000;
/** While waiting, how often it looks for a place freed by another process (its own process's wake it at once). */
const LOOK_EVERY_MS = 50;
/** How long a place given back with nobody waiting stays the process's, for its next delivery to that endpoint. */
export const KEEP_IDLE_MS = LOOK_EVERY_MS;

/**
 * A delivery waiting in line: how to wake it between two looks, and the hand-over of a place freed in this
 * process, once one is under way (`given`: whether it succeeded).
 */
type Waiter = {
  delivery: string;
  /** When it came (`Waiting.arrivals`): the line is in this order. */
  arrival: number;
  wake: (() => void) | null;
  given: Promise<boolean> | null;
};
/** An endpoint's deliveries waiting in this process, first come first served. */
type Line = { waiters: Waiter[] };
/**
 * A place this process holds: its lease in Redis (`member`, the delivery that took it) and the time until which
 * the lease surely lasts, by this process's clock (counted from before the call that took it).
 */
type Place = { member: string; until: number };
/**
 * The process's line: the deliveries waiting for a place (`total`: those holding a worker), and the places
 * held, by endpoint and delivery.
 */
type Waiting = {
  lines: Map<string, Line>;
  total: number;
  /** Deliveries that came for a place so far: one that asked Redis in vain joins the line before later ones. */
  arrivals: number;
  held: Map<string, Place>;
  /** How many of `held` are each endpoint's. */
  heldCount: Map<string, number>;
  /**
   * Places being asked of Redis, by endpoint: counted as held until the answer, so that deliveries arriving
   * together (the creations of one wave end at once) do not each ask for a place that cannot be free.
   */
  asking: Map<string, number>;
  /** Places given back with nobody waiting, kept a moment (`KEEP_IDLE_MS`), by endpoint. */
  idle: Map<string, { place: Place; timer: NodeJS.Timeout }[]>;
};

/**
 * An endpoint's in-flight places (at most `limit` across the fleet, a Redis lease each: `WebhookFleetState`),
 * taken and given back by one worker process's deliveries. A delivery that finds its endpoint's places taken
 * waits here a moment instead of going back to the queue as a delayed job at once: when a delivery of this
 * process gives its place back, it hands it over to the first in line (the place is never free for another to
 * take meanwhile), without a job's round trip through Redis or a second read of what the delivery needs; a
 * delivery arriving while others wait here queues behind them, and only the first in line looks in Redis for a
 * place freed elsewhere. The hand-over costs nothing in Redis while the lease has at least half its time left (a
 * delivery's whole time: the lease is twice that), so the taker's delivery ends before it lapses; an older lease
 * is handed over in Redis, as a new lease in the taker's name (one call). The wait is bounded, so slow
 * endpoints still cannot take the worker's slots: at most `maxWaiting` deliveries holding a worker wait in a
 * process (a quarter of its concurrency), whatever their endpoints, none longer than `PLACE_WAIT_MS`. The rest
 * wait as delayed jobs, holding no worker, as before.
 *
 * One per process (`WebhookProcess`), shared by its delivery jobs and its direct attempts: the line is the
 * process's.
 */
export class EndpointPlaces {
  private readonly waiting: Waiting = {
    lines: new Map(),
    total: 0,
    arrivals: 0,
    held: new Map(),
    heldCount: new Map(),
    asking: new Map(),
    idle: new Map(),
  };
  private readonly clock: () => number;
  private readonly keepIdleMs: number;

  constructor(
    private readonly fleet: WebhookFleetState,
    private readonly limit: number,
    private readonly leaseMs: number,
    private readonly maxWaiting: number,
    options: { clock?: () => number; keepIdleMs?: number } = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.keepIdleMs = options.keepIdleMs ?? KEEP_IDLE_MS;
  }

  /**
   * Takes a place for the delivery, waiting for one as said above; false when none came. `holdsWorker: false`
   * (a direct attempt, which holds no worker slot while it waits: `DirectDeliveries` bounds their number) waits
   * in line whatever the number of deliveries waiting.
   */
  async take(endpointId: string, delivery: string, holdsWorker = true): Promise<boolean> {
    const state = this.waiting;
    const key = heldKey(endpointId, delivery);
    const arrival = state.arrivals++;
    let line = state.lines.get(endpointId);
    if (!line?.waiters.length) {
      if (this.takeKept(endpointId, delivery)) return true;
      // Not asked when every place the endpoint has is this process's, or being asked for: none can be free.
      if (this.holding(endpointId) < this.limit && (await this.takeSlot(endpointId, delivery))) return true;
    }
    if (holdsWorker && state.total >= this.maxWaiting) return false;
    line = state.lines.get(endpointId) ?? { waiters: [] };
    state.lines.set(endpointId, line);
    const me: Waiter = { delivery, arrival, wake: null, given: null };
    // Behind those that came before it; ahead of those that came while it asked Redis.
    let at = line.waiters.length;
    while (at > 0 && line.waiters[at - 1]!.arrival > arrival) at--;
    line.waiters.splice(at, 0, me);
    if (holdsWorker) state.total++;
    const deadline = Date.now() + PLACE_WAIT_MS;
    try {
      for (;;) {
        // Handed a place by a delivery of this process (its hand-over settled before giving up).
        if (me.given) {
          if (await me.given) return true;
          me.given = null;
        }
        if (Date.now() >= deadline) return false;
        // A place kept idle since this delivery looked (given back while it was joining the line).
        if (line.waiters[0] === me && this.takeKept(endpointId, delivery)) return true;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(
            () => {
              me.wake = null;
              resolve();
            },
            Math.min(LOOK_EVERY_MS, deadline - Date.now()),
          );
          me.wake = () => {
            clearTimeout(timer);
            me.wake = null;
            resolve();
          };
        });
        // A place freed elsewhere in the fleet, looked for by the first in line only (those behind it would
        // take it out of turn, each look a call to Redis).
        if (!me.given && line.waiters[0] === me && this.holding(endpointId) < this.limit) {
          const from = this.clock();
          if (await this.ask(endpointId, delivery)) {
            // Handed a place meanwhile too: one is enough. A hand-over in Redis is a lease in this delivery's
            // name, the same as the one just taken; a hand-over here is another's, and the one taken goes back.
            const handed = me.given && (await me.given) ? state.held.get(key) : undefined;
            if (!handed) this.hold(endpointId, delivery, { member: delivery, until: from + this.leaseMs });
            else if (handed.member !== delivery)
              await this.fleet.releaseSlot(endpointId, delivery).catch(() => undefined); // silent-ok: the lease lapses
            return true;
          }
        }
      }
    } finally {
      const at = line.waiters.indexOf(me);
      if (at >= 0) line.waiters.splice(at, 1);
      if (holdsWorker) state.total--;
      if (line.waiters.length === 0 && state.lines.get(endpointId) === line) state.lines.delete(endpointId);
    }
  }

  /** Gives the place back: handed over to the first delivery of this process waiting for one, if any. */
  async release(endpointId: string, delivery: string): Promise<void> {
    const { lines } = this.waiting;
    const place = this.unhold(endpointId, delivery) ?? { member: delivery, until: 0 };
    const next = lines.get(endpointId)?.waiters.shift();
    const young = this.young(place);
    if (!next) {
      if (young && this.keepIdleMs > 0) return this.keepIdle(endpointId, place);
      return this.fleet.releaseSlot(endpointId, place.member);
    }
    if (young) {
      this.hold(endpointId, next.delivery, place);
      next.given = Promise.resolve(true);
      next.wake?.();
      return;
    }
    const from = this.clock();
    const given = this.fleet.handOver(endpointId, place.member, next.delivery, this.leaseMs).then(
      (handed) => {
        if (handed)
          this.hold(endpointId, next.delivery, { member: next.delivery, until: from + this.leaseMs });
        return handed;
      },
      () => false,
    );
    next.given = given;
    next.wake?.();
    // Not handed over (this lease had lapsed, or Redis failed): the waiter looks again; the place is given back.
    if (!(await given)) await this.fleet.releaseSlot(endpointId, place.member);
  }

  private hold(endpointId: string, delivery: string, place: Place): void {
    const { held, heldCount } = this.waiting;
    const key = heldKey(endpointId, delivery);
    if (!held.has(key)) heldCount.set(endpointId, (heldCount.get(endpointId) ?? 0) + 1);
    held.set(key, place);
  }

  private unhold(endpointId: string, delivery: string): Place | undefined {
    const { held, heldCount } = this.waiting;
    const key = heldKey(endpointId, delivery);
    const place = held.get(key);
    if (!place) return undefined;
    held.delete(key);
    const left = (heldCount.get(endpointId) ?? 1) - 1;
    if (left > 0) heldCount.set(endpointId, left);
    else heldCount.delete(endpointId);
    return place;
  }

  /** The endpoint's places this process holds (its deliveries' and those it keeps idle) or is asking for. */
  private holding(endpointId: string): number {
    const { heldCount, idle, asking } = this.waiting;
    return (
      (heldCount.get(endpointId) ?? 0) + (idle.get(endpointId)?.length ?? 0) + (asking.get(endpointId) ?? 0)
    );
  }

  /** Asks Redis for one of the endpoint's places (a lease in the delivery's name), counted as held meanwhile. */
  private async ask(endpointId: string, delivery: string): Promise<boolean> {
    const { asking } = this.waiting;
    asking.set(endpointId, (asking.get(endpointId) ?? 0) + 1);
    try {
      return await this.fleet.takeSlot(endpointId, delivery, this.limit, this.leaseMs);
    } finally {
      const left = asking.get(endpointId)! - 1;
      if (left > 0) asking.set(endpointId, left);
      else asking.delete(endpointId);
    }
  }

  /** Keeps a place given back with nobody waiting for the process's next delivery, a moment, then gives it back. */
  private keepIdle(endpointId: string, place: Place): void {
    const { idle } = this.waiting;
    const kept = idle.get(endpointId) ?? [];
    idle.set(endpointId, kept);
    const entry = {
      place,
      timer: setTimeout(() => {
        const at = kept.indexOf(entry);
        if (at >= 0) kept.splice(at, 1);
        if (kept.length === 0 && idle.get(endpointId) === kept) idle.delete(endpointId);
        void this.fleet.releaseSlot(endpointId, place.member).catch(() => undefined); // silent-ok: the lease lapses
      }, this.keepIdleMs),
    };
    entry.timer.unref();
    kept.push(entry);
  }

  /** Gives the delivery a place kept idle with at least half its lease left (an older one is given back). */
  private takeKept(endpointId: string, delivery: string): boolean {
    const { idle } = this.waiting;
    const kept = idle.get(endpointId);
    while (kept?.length) {
      const { place, timer } = kept.pop()!;
      clearTimeout(timer);
      if (kept.length === 0) idle.delete(endpointId);
      if (this.young(place)) {
        this.hold(endpointId, delivery, place);
        return true;
      }
      void this.fleet.releaseSlot(endpointId, place.member).catch(() => undefined); // silent-ok: the lease lapses
    }
    return false;
  }

  /** Gives back the places the process keeps idle (on shutdown: another process may take them at once). */
  async releaseIdle(): Promise<void> {
    const { idle } = this.waiting;
    const all = [...idle].flatMap(([endpointId, kept]) => kept.map((k) => ({ endpointId, ...k })));
    idle.clear();
    await Promise.all(
      all.map(({ endpointId, place, timer }) => {
        clearTimeout(timer);
        return this.fleet.releaseSlot(endpointId, place.member).catch(() => undefined); // silent-ok: it lapses
      }),
    );
  }

  /** Whether a delivery starting now ends before the place's lease lapses (half the lease is a delivery's time). */
  private young(place: Place): boolean {
    return this.clock() + this.leaseMs / 2 <= place.until;
  }

  private async takeSlot(endpointId: string, delivery: string): Promise<boolean> {
    const from = this.clock();
    if (!(await this.ask(endpointId, delivery))) return false;
    this.hold(endpointId, delivery, { member: delivery, until: from + this.leaseMs });
    return true;
  }
}

const heldKey = (endpointId: string, delivery: string) => `${endpointId}\n${delivery}`;

/**
 * A process's places as its deliveries take them, the delivery jobs' and the direct attempts' alike (one line
 * per process): `WEBHOOK_ENDPOINT_CONCURRENCY` per endpoint, a lease of twice the delivery's time, at most a
 * quarter of the worker concurrency waiting.
 */
export function endpointPlaces(
  fleet: WebhookFleetState,
  config: Pick<Config, 'WEBHOOK_ENDPOINT_CONCURRENCY' | 'WEBHOOK_TIMEOUT_MS' | 'WORKER_CONCURRENCY'>,
): EndpointPlaces {
  return new EndpointPlaces(
    fleet,
    config.WEBHOOK_ENDPOINT_CONCURRENCY,
    config.WEBHOOK_TIMEOUT_MS * 2,
    Math.floor(config.WORKER_CONCURRENCY / 4),
  );
}
