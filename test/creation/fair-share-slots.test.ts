import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { producerConnection, type RedisClient } from '../../src/infra/redis.js';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { retryAfter } from '../../src/use-cases/creation/create-request.js';
import { fillFreeSlots, handOnSlot } from '../../src/use-cases/creation/fair-dispatch.js';
import { testConfig } from '../support/env.js';
import { until } from './support.js';

// The fair share's decisions, on a real Redis (one server or the cluster, as the leg runs): each case has a
// queue prefix of its own, so its slots, shares and lines start empty.
let redis: RedisClient;
beforeAll(() => {
  redis = producerConnection(testConfig(), { enableOfflineQueue: true });
});
afterAll(() => redis?.disconnect());

function slotsWith(limit: number, extra: Record<string, string> = {}) {
  const config = testConfig({
    TEST_LABEL: 'fair',
    ACCOUNT_CREATION_CONCURRENCY: String(limit),
    ...extra,
  });
  return new CreationSlots(redis, config);
}

/** Takes slots for `org` until refused; returns the members it holds. */
async function takeAll(slots: CreationSlots, org: string, max = 1_000): Promise<string[]> {
  const held: string[] = [];
  for (let i = 0; i < max; i++) {
    const member = `${org}/${held.length}/${Math.random()}`;
    const answer = await slots.acquire(member, 'api', { organisationId: org });
    if (answer.status !== 'taken') break;
    held.push(member);
  }
  return held;
}

describe('the fair share of the creation limit', () => {
  it('gives a lone organisation the whole limit, and refuses it past the limit', async () => {
    const slots = slotsWith(10);
    const held = await takeAll(slots, 'A');
    expect(held).toHaveLength(10);
    const refused = await slots.acquire('A/extra', 'api', { organisationId: 'A' });
    expect(refused).toMatchObject({ status: 'limit_reached', inFlight: 10, share: { inUse: 10, share: 10 } });
  });

  it('an organisation under its share waits instead of being refused; the next free slots are its own', async () => {
    const slots = slotsWith(10);
    const a = await takeAll(slots, 'A');
    expect(a).toHaveLength(10);
    // B asks while A holds everything: told to wait (never refused), and now counts as active: shares of 5.
    const ask = await slots.acquire('B/0', 'api', { organisationId: 'B', ticket: 'req:b0' });
    expect(ask.status).toBe('wait');
    expect(ask.share).toMatchObject({ inUse: 0, share: 5, waiting: 1 });
    // A frees a slot: A (over its share of 5) is refused it, B takes it.
    await slots.finish(a.pop()!, 0);
    expect((await slots.acquire('A/again', 'api', { organisationId: 'A' })).status).toBe('limit_reached');
    const b0 = await slots.acquire('B/0', 'api', { organisationId: 'B', ticket: 'req:b0' });
    expect(b0).toMatchObject({ status: 'taken', share: { inUse: 1, share: 5, waiting: 0 } });
    // B keeps asking for more as A's creations end, up to its share; then the two are level.
    for (let i = 1; i < 5; i++) {
      await slots.finish(a.pop()!, 0);
      const ticket = `req:b${i}`;
      expect((await slots.acquire(`B/${i}`, 'api', { organisationId: 'B', ticket })).status).toBe('taken');
    }
    expect(await slots.usage('A')).toMatchObject({ inUse: 5, share: 5, inFlight: 10 });
    expect(await slots.usage('B')).toMatchObject({ inUse: 5, share: 5, inFlight: 10 });
    // At its share, B is refused like anyone over theirs.
    expect((await slots.acquire('B/5', 'api', { organisationId: 'B' })).status).toBe('limit_reached');
  });

  it('shares by weight (2:1), and a weight of 1 is the default', async () => {
    const slots = slotsWith(30);
    await slots.setWeights(new Map([['A', 2]]));
    await takeAll(slots, 'A', 20);
    const b = await slots.acquire('B/0', 'api', { organisationId: 'B', ticket: 'req:b' });
    expect(b.status).toBe('taken');
    expect((await slots.usage('A')).share).toBeCloseTo(20, 2);
    expect((await slots.usage('B')).share).toBeCloseTo(10, 2);
    // A third organisation joins: 30 × 2/4, 30 × 1/4 each.
    await slots.acquire('C/0', 'api', { organisationId: 'C' });
    expect((await slots.usage('A')).share).toBeCloseTo(15, 2);
    expect((await slots.usage('C')).share).toBeCloseTo(7.5, 2);
  });

  it('with the fair share off, only the global limit applies', async () => {
    const slots = slotsWith(10, { ACCOUNT_CREATION_FAIR_SHARE: 'false' });
    expect(await takeAll(slots, 'A')).toHaveLength(10);
    await slots.finish(`A/0/none`, 0);
    const b = await slots.acquire('B/0', 'api', { organisationId: 'B', ticket: 'req:b' });
    expect(b.status).toBe('limit_reached');
  });

  it('never holds more than the limit while three organisations race, and every count returns to zero', async () => {
    const limit = 12;
    const slots = slotsWith(limit);
    let maxSeen = 0;
    const worker = async (org: string, n: number) => {
      for (let i = 0; i < 40; i++) {
        const member = `${org}/${n}/${i}`;
        const answer = await slots.acquire(member, 'api', { organisationId: org, ticket: `req:${member}` });
        maxSeen = Math.max(maxSeen, answer.inFlight);
        if (answer.status === 'taken') {
          maxSeen = Math.max(maxSeen, await slots.inFlight());
          await slots.finish(member, 0);
        }
      }
    };
    await Promise.all(['A', 'B', 'C'].flatMap((org) => Array.from({ length: 10 }, (_, n) => worker(org, n))));
    expect(maxSeen).toBeLessThanOrEqual(limit);
    expect(await slots.peak()).toBeLessThanOrEqual(limit);
    expect(await slots.inFlight()).toBe(0);
    for (const org of ['A', 'B', 'C']) expect((await slots.usage(org)).inUse).toBe(0);
  });

  it('a crashed holder’s slot lapses with its organisation’s count, and a ticket nobody renews lapses', async () => {
    const slots = slotsWith(4, { ACCOUNT_CREATION_SLOT_LEASE_MS: '1000' });
    expect(await takeAll(slots, 'A')).toHaveLength(4);
    expect((await slots.acquire('B/0', 'api', { organisationId: 'B', ticket: 'req:b' })).status).toBe('wait');
    expect((await slots.usage('B')).waiting).toBe(1);
    // Nobody renews: A's slots lapse after the lease, B's ticket after a second.
    await until(async () => (await slots.usage('A')).inUse === 0, 'the slots to lapse', 10_000);
    await until(async () => (await slots.usage('B')).waiting === 0, 'the ticket to lapse', 10_000);
    expect(await slots.inFlight()).toBe(0);
    // With nobody else active, A has the whole limit again.
    expect((await slots.usage('A')).share).toBe(4);
  });
});

describe('the lines of parked v2 tasks', () => {
  it('serves the organisation with the fewest slots in use per weight first, each line oldest first', async () => {
    const slots = slotsWith(10);
    await slots.setWeights(new Map([['A', 2]]));
    // A holds 4 slots (per weight: 2), B holds 3.
    for (let i = 0; i < 4; i++) await slots.acquire(`A/h${i}`, 'worker', { organisationId: 'A' });
    for (let i = 0; i < 3; i++) await slots.acquire(`B/h${i}`, 'worker', { organisationId: 'B' });
    await slots.park('A', 'job-a2', 2_000, 60_000);
    await slots.park('A', 'job-a1', 1_000, 60_000);
    await slots.park('B', 'job-b1', 500, 60_000);
    // Parking again keeps the place.
    await slots.park('A', 'job-a1', 9_000, 60_000);
    expect((await slots.usage('A')).waiting).toBe(2);
    // A: (4 + 1) / 2 = 2.5 against B: (3 + 1) / 1 = 4.
    expect(await slots.nextParkedOrganisation()).toBe('A');
    const promoted: string[] = [];
    expect(await handOnSlot(slots, async (id) => (promoted.push(id), true))).toBe(true);
    expect(promoted).toEqual(['job-a1']);
    expect((await slots.usage('A')).waiting).toBe(1);
    // A task that took its slot leaves its line.
    expect(await slots.unpark('A', 'job-a2')).toBe('job-a2');
    expect(await slots.nextParkedOrganisation()).toBe('B');
  });

  it('fills free slots with parked tasks, passing over ones whose job is gone', async () => {
    const slots = slotsWith(3);
    await slots.acquire('A/h0', 'worker', { organisationId: 'A' });
    for (const id of ['gone-1', 'live-1', 'live-2', 'live-3']) await slots.park('A', id, Date.now(), 60_000);
    const promoted: string[] = [];
    const count = await fillFreeSlots(slots, async (id) => {
      if (id.startsWith('gone')) return false;
      promoted.push(id);
      return true;
    });
    // Two free slots: two live tasks promoted, the gone one dropped on the way.
    expect(count).toBe(2);
    expect(promoted).toEqual(['live-1', 'live-2']);
    expect(await slots.unpark('A')).toBe('live-3');
    expect(await slots.nextParkedOrganisation()).toBeNull();
  });
});

describe('Retry-After from the caller’s own position', () => {
  it('grows with what the organisation holds past its share and with its waiting creations', () => {
    // 20 in use with a share of 10, 5 waiting, 1 s held on average: (10 + 5 + 1) × 1000 / 20 = 0.8 s → 1 s.
    expect(retryAfter({ inUse: 20, share: 10, waiting: 5, holdMs: 1_000 })).toBe(1);
    // Far past its share and slow creations: longer.
    expect(retryAfter({ inUse: 10, share: 2, waiting: 30, holdMs: 2_000 })).toBe(8);
    // Nothing known yet: the shortest.
    expect(retryAfter({ inUse: 0, share: 0, waiting: 0, holdMs: 0 })).toBe(1);
  });
});
