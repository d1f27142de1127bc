import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { failedCollection, isDatabaseTimeout, isDatabaseUnavailable } from '../../src/infra/mongo.js';
import { openDatabase } from '../../src/storage/database.js';
import type { Database } from '../../src/storage/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { uniqueName } from '../support/env.js';
import { startHoldingProxy, type HoldingProxy } from '../support/mongo-proxy.js';
import { accountPayload, apiFor, setupTenant, type Api } from '../creation/support.js';

// Every database command is bounded (MONGO_COMMAND_TIMEOUT_MS): a server that takes a command and never answers
// (here a proxy in front of the suite's FerretDB that stops forwarding its connection) fails it after the bound,
// so its HTTP request answers the documented 503 instead of hanging, and the log line names the collection.
// A read is tried once more by the driver (retryable reads), so a read that hangs twice takes the bound twice.
const BOUND_MS = 1_000;
/** Time past the bound a loaded machine may take to answer (the request's other commands, the event loop). */
const SLACK_MS = 4_000;
/** Before the bound existed a held request never answered: give up on it well before the test's timeout. */
const GIVE_UP_MS = 30_000;

let proxy: HoldingProxy;
let t: TestApp;
let api: Api;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  const mongo = new URL(inject('mongoUrl'));
  proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
  t = await startTestApp({
    env: {
      TEST_LABEL: 'dbhang',
      MONGO_URL: proxy.url(uniqueName('dbhang')),
      MONGO_COMMAND_TIMEOUT_MS: String(BOUND_MS),
      LOG_LEVEL: 'warn',
    },
    logStream: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  });
  api = apiFor(t, (await setupTenant(t, 'Hang Energía')).headers);
});

afterAll(async () => {
  proxy?.release();
  await t?.close();
  await proxy?.close();
});

/** Holds the next `times` commands `command` on `collection` (a read's retry is the second). */
function hold(command: string, collection: string, times = 1): Promise<void> {
  return (async () => {
    for (let i = 0; i < times; i++) await proxy.holdNext(command, collection);
  })();
}

async function timed<T>(request: Promise<T>): Promise<{ res: T | null; ms: number }> {
  const started = Date.now();
  const res = await Promise.race([
    request,
    new Promise<null>((resolve) => setTimeout(() => resolve(null), GIVE_UP_MS).unref()),
  ]);
  return { res, ms: Date.now() - started };
}

const timedOutLines = (collection: string) =>
  logs.filter((l) => l.msg === 'database command timed out' && l.collection === collection);

describe('a request whose database command hangs', () => {
  it('answers 503 service_unavailable after the bound, names the collection in its log line, and the retry succeeds', async () => {
    const held = hold('insert', 'import_events');
    const { res, ms } = await timed(api.stage(accountPayload('HANG-W1')));
    await held;
    expect(res?.statusCode, `answered after ${ms} ms`).toBe(503);
    expect(res!.headers['retry-after']).toMatch(/^\d+$/);
    expect(res!.json()).toMatchInlineSnapshot(`
      {
        "code": "service_unavailable",
        "detail": "A backing service is unavailable. Retry shortly.",
      }
    `);
    expect(ms).toBeGreaterThanOrEqual(BOUND_MS);
    expect(ms).toBeLessThan(BOUND_MS + SLACK_MS);
    const [line] = timedOutLines('import_events');
    expect(line).toMatchObject({
      level: 'warn',
      collection: 'import_events',
      request_id: expect.any(String),
    });
    // Nothing stays wedged: the same request sent again goes through (writes are idempotent).
    proxy.release();
    expect((await api.stage(accountPayload('HANG-W1'))).statusCode).toBe(201);
  });

  it('that is a read answers 503 once the driver’s second try timed out too', async () => {
    const held = hold('find', 'account_import_processes', 2);
    const { res, ms } = await timed(api.stage(accountPayload('HANG-R1')));
    await held;
    expect(res?.statusCode, `answered after ${ms} ms`).toBe(503);
    expect(res!.json()).toMatchObject({ code: 'service_unavailable' });
    expect(ms).toBeGreaterThanOrEqual(2 * BOUND_MS);
    expect(ms).toBeLessThan(2 * BOUND_MS + SLACK_MS);
    expect(timedOutLines('account_import_processes')).toHaveLength(1);
    proxy.release();
    expect((await api.stage(accountPayload('HANG-R1'))).statusCode).toBe(201);
  });
});

describe('what a hung command throws, by the way it was sent', () => {
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({
      MONGO_URL: proxy.url(uniqueName('dbhangops')),
      MONGO_SERVER_SELECTION_TIMEOUT_MS: 5_000,
      MONGO_MAX_POOL_SIZE: 4,
      MONGO_COMMAND_TIMEOUT_MS: BOUND_MS,
    });
    await db.models.Note.collection.insertOne(note('k1', 'x'));
  });
  afterAll(async () => {
    proxy.release();
    await db?.conn.dropDatabase().catch(() => undefined);
    await db?.close();
  });

  const note = (dedupKey: string, body: string) => ({
    accountId: new mongoose.Types.ObjectId(),
    dedupKey,
    body,
    noteCreatedAt: new Date(),
    origin: 'system',
  });
  // Mongoose reports a collection's own operations on the connection, a query's and a cursor's on its tracing
  // channels: each way of sending a command is covered.
  const cases: Array<[string, string, number, () => Promise<unknown>]> = [
    ['find (a query read through a cursor)', 'find', 2, () => db.models.Note.find({}).lean().exec()],
    ['findOne (a query)', 'find', 2, () => db.models.Note.findOne({ body: 'x' }).lean().exec()],
    [
      'updateOne (a query write)',
      'update',
      1,
      () => db.models.Note.updateOne({ body: 'x' }, { isPinned: true }),
    ],
    ['aggregate', 'aggregate', 2, () => db.models.Note.aggregate([{ $match: {} }]).exec()],
    ['a cursor’s next', 'find', 2, () => db.models.Note.find({}).lean().cursor().next()],
    [
      'insertMany on the collection',
      'insert',
      1,
      () => db.models.Note.collection.insertMany([note('k2', 'y')]),
    ],
    [
      'bulkWrite on the collection',
      'update',
      1,
      () =>
        db.models.Note.collection.bulkWrite([
          { updateOne: { filter: { body: 'x' }, update: { $set: { isPinned: false } } } },
        ]),
    ],
  ];
  for (const [label, command, times, run] of cases)
    it(`${label}: an unavailable database past the bound, on the collection "notes"`, async () => {
      const held = hold(command, 'notes', times);
      const { res: err, ms } = await timed(
        run().then(
          () => null,
          (e: unknown) => e,
        ),
      );
      await held;
      proxy.release();
      expect(err, `settled after ${ms} ms`).toBeInstanceOf(Error);
      expect({
        unavailable: isDatabaseUnavailable(err),
        timeout: isDatabaseTimeout(err),
        collection: failedCollection(err),
      }).toEqual({ unavailable: true, timeout: true, collection: 'notes' });
      expect(ms).toBeLessThan(times * BOUND_MS + SLACK_MS);
    });
});
