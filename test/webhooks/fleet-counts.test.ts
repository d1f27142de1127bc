import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { WebhookFleetState } from '../../src/use-cases/webhooks/fleet-state.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { until } from '../creation/support.js';

// Delivery outcome counts: gathered in the process and added in Redis together, except a count that settles a
// delivery, which goes with the settle at once.
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'fleet_counts' } });
});
afterAll(async () => t?.close());

const countOf = async (fleet: WebhookFleetState, type: string, outcome: string) =>
  (await fleet.counters()).find((c) => c.type === type && c.outcome === outcome)?.count ?? 0;

it('gathers counts in the process and adds them in one round, on its own shortly or when flushed', async () => {
  // Gathered for a minute here (no round of its own during the first checks, however slow the machine).
  const fleet = new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX, 60_000);
  const type = 'test.gathered-v1';
  for (let i = 0; i < 5; i++) await fleet.count(type, 'delivered', null);
  await fleet.count(type, 'retried', null);
  // Not in Redis yet: none of the six was a call of its own.
  expect(await countOf(fleet, type, 'delivered')).toBe(0);
  await fleet.flushCounts();
  expect(await countOf(fleet, type, 'delivered')).toBe(5);
  expect(await countOf(fleet, type, 'retried')).toBe(1);
  // Unflushed, they are added all the same, within moments.
  await new WebhookFleetState(t.app.redis, t.config.QUEUE_PREFIX).count(type, 'delivered', null);
  await until(async () => (await countOf(fleet, type, 'delivered')) === 6, 'the gathered count');
  // A count that settles a delivery is added with the settle, at once.
  await t.app.redis.zadd(redisKeys(t.config.QUEUE_PREFIX).webhooks.undelivered, 1, 'delivery-1');
  await fleet.count(type, 'failed', 'delivery-1');
  expect(await countOf(fleet, type, 'failed')).toBe(1);
  expect(await fleet.oldestUndeliveredAgeSeconds()).toBe(0);
});
