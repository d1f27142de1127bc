import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

// Outbox pages (`storage/webhooks/outbox-pages.ts`): the entries of events a process writes undispatched share a
// page, written in one insert, deleted with the last of its events. Which events share a page follows from the
// group commit alone: covers asked for while a page is being written go in the next one.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'outbox' } });
});
afterAll(async () => t?.close());

it('covers asked for while a page is written share the next page, which goes with the last of its events', async () => {
  const { WebhookOutbox } = t.app.db.models;
  const store = t.app.storage.webhooks;
  const occurredAt = new Date();
  const keys = Array.from({ length: 6 }, (_, i) => `outbox-page-${i}`);
  // Asked for in one tick: the first page goes at once with the first key, the other five wait and share the next.
  await Promise.all(
    keys.map((key) => store.outbox.expectDispatch({ _id: key, dispatched: false, occurredAt })),
  );
  const pages = await WebhookOutbox.find({ keys: { $in: keys } }).lean();
  expect(pages.map((p) => p.keys!)).toEqual(expect.arrayContaining([[keys[0]], keys.slice(1)]));
  expect(pages).toHaveLength(2);
  expect(await WebhookOutbox.countDocuments({ _id: { $in: keys } })).toBe(0);

  const shared = pages.find((p) => p.keys!.length === 5)!;
  for (const key of keys.slice(1, 5)) await store.outbox.markDispatched(key);
  expect(await WebhookOutbox.exists({ _id: shared._id })).not.toBeNull();
  await store.outbox.markDispatched(keys[5]!);
  expect(await WebhookOutbox.exists({ _id: shared._id })).toBeNull();
  await store.outbox.markDispatched(keys[0]!);
  expect(await WebhookOutbox.countDocuments({ keys: { $in: keys } })).toBe(0);
  // None is waiting for a dispatch any more: the outbox no longer holds them.
  for (const key of keys) expect(await store.outbox.undispatched(key)).toBe(false);
});
