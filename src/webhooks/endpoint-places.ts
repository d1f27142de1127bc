import type { Config } from '../config.js';
import type { WebhookFleetState } from './fleet-state.js';

/** How long a delivery waits in its process for one of its endpoint's places before it waits as a delayed job. */
export const PLACE_WAIT_MS = 1_000;
/** While waiting, how often it looks for a place freed by another process (its own process's wake it at once). */
const LOOK_EVERY_MS = 50;

/** An endpoint's deliveries waiting in this process: how many, and how to wake those between two looks. */
type Line = { waiting: number; wakes: Set<() => void> };
/** Per fleet state's Redis client (one per worker process): the deliveries waiting for a place (`total`: those holding a worker). */
type Waiting = { lines: Map<string, Line>; total: number };
const waitingOf = new WeakMap<object, Waiting>();

/**
 * An endpoint's in-flight places (at most `limit` across the fleet, a Redis lease each: `WebhookFleetState`),
 * taken and given back by one worker process's deliveries. A delivery that finds its endpoint's places taken
 * waits here a moment instead of going back to the queue as a delayed job at once: when a delivery of this
 * process gives its place back, the first in line takes it, without a job's round trip through Redis or a
 * second read of what the delivery needs. The wait is bounded, so slow endpoints still cannot take the worker's
 * slots: at most `maxWaiting` deliveries wait in a process (a quarter of its concurrency), whatever their
 * endpoints, none longer than `PLACE_WAIT_MS`. The rest wait as delayed jobs, holding no worker, as before.
 */
export class EndpointPlaces {
  private readonly waiting: Waiting;

  constructor(
    private readonly fleet: WebhookFleetState,
    fleetRedis: object,
    private readonly limit: number,
    private readonly leaseMs: number,
    private readonly maxWaiting: number,
  ) {
    let state = waitingOf.get(fleetRedis);
    if (!state) {
      state = { lines: new Map(), total: 0 };
      waitingOf.set(fleetRedis, state);
    }
    this.waiting = state;
  }

  /**
   * Takes a place for the delivery, waiting for one as said above; false when none came. `holdsWorker: false`
   * (a direct attempt, which holds no worker slot while it waits: `DirectDeliveries` bounds their number) waits
   * in line whatever the number of deliveries waiting.
   */
  async take(endpointId: string, delivery: string, holdsWorker = true): Promise<boolean> {
    if (await this.fleet.takeSlot(endpointId, delivery, this.limit, this.leaseMs)) return true;
    const state = this.waiting;
    const line = state.lines.get(endpointId) ?? { waiting: 0, wakes: new Set<() => void>() };
    if (holdsWorker && state.total >= this.maxWaiting) return false;
    state.lines.set(endpointId, line);
    line.waiting++;
    if (holdsWorker) state.total++;
    const deadline = Date.now() + PLACE_WAIT_MS;
    try {
      while (Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            line.wakes.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, Math.min(LOOK_EVERY_MS, deadline - Date.now()));
          line.wakes.add(wake);
        });
        if (await this.fleet.takeSlot(endpointId, delivery, this.limit, this.leaseMs)) return true;
      }
      return false;
    } finally {
      line.waiting--;
      if (holdsWorker) state.total--;
      if (line.waiting === 0 && state.lines.get(endpointId) === line) state.lines.delete(endpointId);
    }
  }

  /** Gives the place back and wakes the first delivery of this process waiting for one. */
  async release(endpointId: string, delivery: string): Promise<void> {
    try {
      await this.fleet.releaseSlot(endpointId, delivery);
    } finally {
      const first = this.waiting.lines.get(endpointId)?.wakes.values().next().value;
      first?.();
    }
  }
}

/**
 * A process's places as its deliveries take them, the delivery jobs' and the direct attempts' alike (one line
 * per process): `WEBHOOK_ENDPOINT_CONCURRENCY` per endpoint, a lease of twice the delivery's time, at most a
 * quarter of the worker concurrency waiting.
 */
export function endpointPlaces(
  fleet: WebhookFleetState,
  fleetRedis: object,
  config: Pick<Config, 'WEBHOOK_ENDPOINT_CONCURRENCY' | 'WEBHOOK_TIMEOUT_MS' | 'WORKER_CONCURRENCY'>,
): EndpointPlaces {
  return new EndpointPlaces(
    fleet,
    fleetRedis,
    config.WEBHOOK_ENDPOINT_CONCURRENCY,
    config.WEBHOOK_TIMEOUT_MS * 2,
    Math.floor(config.WORKER_CONCURRENCY / 4),
  );
}
