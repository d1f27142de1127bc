import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { EndpointPlaces } from '../../src/use-cases/webhooks/endpoint-places.js';
import { until } from '../creation/support.js';
import { WebhookFleetState } from '../../src/use-cases/webhooks/fleet-state.js';
import { startTestApp, type TestApp } from '../support/app.js';

// An endpoint's in-flight places (a Redis lease each, at most the limit across the fleet) and the short wait in
// line of one worker process's deliveries for them.
let t: TestApp;
let fleet: WebhookFleetState;
let n = 0;
const endpoint = () => `endpoint-${++n}`;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'endpoint_places' } });
  fleet = new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX);
});
afterAll(async () => t?.close());

/** One worker process's places (its line is its own). */
const processPlaces = (
  limit: number,
  maxWaiting = 10,
  options: { clock?: () => number; keepIdleMs?: number } = {},
) => new EndpointPlaces(fleet, limit, 60_000, maxWaiting, { keepIdleMs: 0, ...options });

/** Whether the endpoint's places in Redis hold a lease in this name (taking it again in the same name is a no-op). */
const leaseIn = async (e: string, member: string) =>
  (await t.app.redis.zscore(redisKeys(t.config.QUEUE_PREFIX).webhooks.inFlight(e), member)) !== null;

/** Whether a promise has settled, after everything already due has run (a round trip to Redis included). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await t.app.redis.ping();
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('endpoint places', () => {
  it('a delivery waiting in line takes the place its process gives back', async () => {
    const places = processPlaces(1);
    const e = endpoint();
    expect(await places.take(e, 'a')).toBe(true);
    const b = places.take(e, 'b');
    expect(await settled(b)).toBe(false);
    await places.release(e, 'a');
    expect(await b).toBe(true);
    // b holds a's lease now: handed over in this process, nothing changed in Redis.
    expect(await leaseIn(e, 'a')).toBe(true);
    expect(await fleet.takeSlot(e, 'c', 1, 60_000)).toBe(false);
    await places.release(e, 'b');
    expect(await leaseIn(e, 'a')).toBe(false);
    expect(await fleet.takeSlot(e, 'c', 1, 60_000)).toBe(true);
  });

  it("hands over a lease past half its time in Redis, as a new lease in the taker's name", async () => {
    let now = 1_000_000;
    const places = processPlaces(1, 10, { clock: () => now });
    const e = endpoint();
    expect(await places.take(e, 'a')).toBe(true);
    const b = places.take(e, 'b');
    expect(await settled(b)).toBe(false);
    // Less than half the lease left: b's delivery could outlast it.
    now += 30_001;
    await places.release(e, 'a');
    expect(await b).toBe(true);
    expect(await leaseIn(e, 'a')).toBe(false);
    expect(await leaseIn(e, 'b')).toBe(true);
    expect(await fleet.takeSlot(e, 'c', 1, 60_000)).toBe(false);
    await places.release(e, 'b');
    expect(await leaseIn(e, 'b')).toBe(false);
  });

  it('first come, first served: a place given back is handed over to the first in line, never free for a newcomer', async () => {
    const places = processPlaces(1);
    const e = endpoint();
    expect(await places.take(e, 'a')).toBe(true);
    const b = places.take(e, 'b');
    expect(await settled(b)).toBe(false);
    // Arrives while b waits: queues behind it, even at the moment a place is given back.
    const c = places.take(e, 'c');
    expect(await settled(c)).toBe(false);
    const releasing = places.release(e, 'a');
    // Never free meanwhile: a newcomer elsewhere in the fleet (its call reaches Redis after the release's) finds
    // it taken.
    expect(await fleet.takeSlot(e, 'elsewhere', 1, 60_000)).toBe(false);
    await releasing;
    expect(await b).toBe(true);
    expect(await settled(c)).toBe(false);
    await places.release(e, 'b');
    expect(await c).toBe(true);
    await places.release(e, 'c');
    expect(await fleet.takeSlot(e, 'elsewhere', 1, 60_000)).toBe(true);
  });

  it('keeps a place given back with nobody waiting a moment, for its next delivery, then gives it back', async () => {
    const places = processPlaces(1, 10, { keepIdleMs: 60_000 });
    const e = endpoint();
    expect(await places.take(e, 'a')).toBe(true);
    await places.release(e, 'a');
    // Still the process's: another cannot take it, its next delivery takes it without a call to Redis.
    expect(await leaseIn(e, 'a')).toBe(true);
    expect(await fleet.takeSlot(e, 'elsewhere', 1, 60_000)).toBe(false);
    expect(await places.take(e, 'b')).toBe(true);
    expect(await leaseIn(e, 'b')).toBe(false);
    await places.release(e, 'b');
    // Given back on shutdown (or once the moment is over).
    await places.releaseIdle();
    expect(await leaseIn(e, 'a')).toBe(false);
    expect(await fleet.takeSlot(e, 'elsewhere', 1, 60_000)).toBe(true);
    await fleet.releaseSlot(e, 'elsewhere');
    const brief = processPlaces(1, 10, { keepIdleMs: 20 });
    expect(await brief.take(e, 'c')).toBe(true);
    await brief.release(e, 'c');
    await until(async () => !(await leaseIn(e, 'c')), 'the idle place given back');
  });

  it('does not ask Redis for a place while the process holds every place the endpoint has', async () => {
    const places = processPlaces(1);
    const e = endpoint();
    expect(await places.take(e, 'a')).toBe(true);
    // Gone from Redis behind the process's back: had b asked, it would have taken it.
    await fleet.releaseSlot(e, 'a');
    const b = places.take(e, 'b');
    expect(await settled(b)).toBe(false);
    await places.release(e, 'a');
    expect(await b).toBe(true);
    await places.release(e, 'b');
  });

  it('deliveries arriving together ask Redis for no more places than the endpoint has', async () => {
    // The creations of a wave end at once, and their events' first attempts ask for places together.
    const asked: string[] = [];
    const counting = new (class extends WebhookFleetState {
      override takeSlot(e: string, delivery: string, limit: number, leaseMs: number) {
        asked.push(delivery);
        return super.takeSlot(e, delivery, limit, leaseMs);
      }
    })(t.app.redis, t.config.QUEUE_PREFIX);
    const places = new EndpointPlaces(counting, 2, 60_000, 10, { keepIdleMs: 0 });
    const e = endpoint();
    const takes = Array.from({ length: 10 }, (_, i) => places.take(e, `d${i}`));
    expect(await Promise.all(takes.slice(0, 2))).toEqual([true, true]);
    expect(await settled(Promise.race(takes.slice(2)))).toBe(false);
    // Only the first two asked; the others wait in line for the places the process gives back.
    expect(asked).toEqual(['d0', 'd1']);
    for (let i = 0; i < 10; i++) {
      expect(await takes[i]).toBe(true);
      await places.release(e, `d${i}`);
    }
    expect(asked).toEqual(['d0', 'd1']);
  });

  it('finds a place another process gave back, by looking again: the first in line takes it', async () => {
    const e = endpoint();
    const other = processPlaces(1);
    expect(await other.take(e, 'a')).toBe(true);
    const places = processPlaces(1);
    const first = places.take(e, 'b');
    const second = places.take(e, 'c');
    expect(await settled(first)).toBe(false);
    await other.release(e, 'a');
    expect(await first).toBe(true);
    expect(await settled(second)).toBe(false);
    await places.release(e, 'b');
    expect(await second).toBe(true);
    await places.release(e, 'c');
    expect(await leaseIn(e, 'b')).toBe(false);
  });

  it('waits within bounds: at most so many deliveries of a process wait, and not for long', async () => {
    const places = processPlaces(1, 2);
    const [e1, e2, e3] = [endpoint(), endpoint(), endpoint()];
    for (const e of [e1, e2, e3]) expect(await places.take(e, `${e}-holder`)).toBe(true);
    const waiting1 = places.take(e1, 'w1');
    const waiting2 = places.take(e2, 'w2');
    // Two wait in this process: the most it lets wait, whatever the endpoint.
    expect(await places.take(e3, 'w3')).toBe(false);
    expect(await places.take(e1, 'w1-second')).toBe(false);
    // A direct attempt holds no worker: it waits in line all the same, not counted, and takes a place given back.
    const direct = places.take(e3, 'direct', false);
    await places.release(e3, `${e3}-holder`);
    expect(await direct).toBe(true);
    await places.release(e3, 'direct');
    expect(await places.take(e3, `${e3}-holder`)).toBe(true);
    // Nobody gives a place back: both give up after the wait, and their places were never taken.
    expect(await waiting1).toBe(false);
    expect(await waiting2).toBe(false);
    // Nobody waits any more: a new waiter is accepted (and gets the place given back).
    const again = places.take(e3, 'w3-again');
    await places.release(e3, `${e3}-holder`);
    expect(await again).toBe(true);
  });
});
