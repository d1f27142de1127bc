import mongoose from 'mongoose';
import { describe, expect, inject, it } from 'vitest';
import { batchedInsert } from '../../src/storage/write-path/insert-batcher.js';
import { freePort, startFerretDb } from '../support/processes.js';
import { isTransientDbError } from '../../src/storage/write-path/transient.js';
import { DatabaseUnavailableError, isDatabaseTimeout, isDatabaseUnavailable } from '../../src/infra/mongo.js';
import { startHoldingProxy } from '../support/mongo-proxy.js';

const { MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } =
  mongoose.mongo;

const network = () => new MongoNetworkError('read ECONNRESET');

describe('isDatabaseUnavailable', () => {
  it('recognises an unreachable database in every shape the driver reports it', () => {
    const unavailable = [
      network(),
      new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:1', {} as never),
      // An insertMany cut by the outage: the bulk error carries the network error's own properties.
      new MongoBulkWriteError(network(), {} as never),
      // One sent once the driver knows the server is gone: the bulk error carries the selection's `reason`.
      new MongoBulkWriteError(
        new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:1', {} as never),
        {} as never,
      ),
      // The driver lets a write to a socket the server closed through unwrapped.
      Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' }),
      new Error('the insert failed', { cause: network() }),
      new DatabaseUnavailableError(),
      // FerretDB on PostgreSQL, its PostgreSQL out of connections (as seen on a shared server).
      new MongoServerError({
        message:
          '[msg_update.go:133 handler.(*Handler).updateDocument] failed to connect to `user=postgres database=citest`:\n' +
          '\t127.0.0.1:5432 (127.0.0.1): server error: FATAL: sorry, too many clients already (SQLSTATE 53300)',
        code: 1,
      }),
    ];
    expect(unavailable.filter((e) => !isDatabaseUnavailable(e))).toEqual([]);
  });

  it('leaves refusals and bugs alone', () => {
    const others = [
      new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 }),
      new MongoServerError({ message: 'database is locked (SQLITE_BUSY)', code: 1 }),
      new mongoose.Error.ValidationError(),
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'ECONNREFUSED',
      null,
    ];
    expect(others.filter((e) => isDatabaseUnavailable(e))).toEqual([]);
  });

  it('is never retried at once as a write conflict', () => {
    const labelled = network();
    labelled.addErrorLabel('RetryableWriteError');
    expect(isTransientDbError(labelled)).toBe(false);
    expect(isTransientDbError(new MongoServerError({ message: 'database is locked', code: 1 }))).toBe(true);
  });
});

describe('FerretDB on PostgreSQL whose PostgreSQL cannot be reached', () => {
  it('answers reads and writes with errors recognised as an unavailable database', async () => {
    // Nothing listens on the port: FerretDB itself answers, its backend does not.
    const ferret = await startFerretDb({
      postgresqlUrl: `postgres://postgres@127.0.0.1:${await freePort()}/unreachable`,
    });
    const conn = mongoose.createConnection(`mongodb://127.0.0.1:${ferret.port}/outage`, {
      serverSelectionTimeoutMS: 5_000,
      bufferCommands: false,
    });
    try {
      await conn.asPromise();
      const Thing = conn.model('Thing', new mongoose.Schema({ n: Number }));
      const thrown = await Promise.all(
        [
          Thing.findById(new mongoose.Types.ObjectId()).exec(),
          Thing.collection.insertOne({ n: 1 }),
          batchedInsert(Thing, [{ _id: new mongoose.Types.ObjectId(), n: 2 }]),
        ].map((p) =>
          p.then(
            () => null,
            (err: unknown) => err,
          ),
        ),
      );
      expect(thrown.map((e) => (e as Error | null)?.name)).toEqual([
        'MongoServerError',
        'MongoServerError',
        expect.stringMatching(/^Mongo(Bulk|Server)\w*Error$/),
      ]);
      expect(thrown.filter((e) => !isDatabaseUnavailable(e)).map((e) => String(e))).toEqual([]);
    } finally {
      await conn.close().catch(() => undefined);
      await ferret.stop('SIGKILL');
    }
  });
});

describe('against a database server that goes away', () => {
  it('recognises what reads, inserts and batched inserts throw, before and after the driver notices', async () => {
    const ferret = await startFerretDb();
    const conn = mongoose.createConnection(`mongodb://127.0.0.1:${ferret.port}/outage`, {
      serverSelectionTimeoutMS: 300,
      heartbeatFrequencyMS: 500,
      bufferCommands: false,
    });
    conn.on('error', () => {});
    try {
      await conn.asPromise();
      const Thing = conn.model('Thing', new mongoose.Schema({ n: Number }));
      await batchedInsert(Thing, [{ _id: new mongoose.Types.ObjectId(), n: 0 }]);
      await ferret.stop('SIGKILL');

      const thrown: unknown[] = [];
      const attempt = async (op: () => Promise<unknown>) => {
        try {
          await op();
        } catch (err) {
          thrown.push(err);
        }
      };
      const insert = () => batchedInsert(Thing, [{ _id: new mongoose.Types.ObjectId(), n: 1 }]);
      // Until the driver stops trying connections and answers from its topology (server selection).
      for (let round = 0; !thrown.some((e) => e instanceof MongoServerSelectionError); round++) {
        if (round > 200) throw new Error('the driver never reported a failed server selection');
        await attempt(() => Thing.findById(new mongoose.Types.ObjectId()).exec());
        await attempt(insert);
        await attempt(() => Thing.collection.insertOne({ n: 2 }));
      }
      // Once it does, inserts fail the same way, wrapped in a bulk write error for insertMany.
      await attempt(insert);
      const names = new Set(thrown.map((e) => (e as Error).name));
      expect(names).toContain('MongoServerSelectionError');
      expect(names).toContain('MongoBulkWriteError');
      expect(
        thrown
          .filter((e) => !isDatabaseUnavailable(e))
          .map((e) => `${(e as Error).name}: ${(e as Error).message}`),
      ).toEqual([]);
    } finally {
      await conn.close().catch(() => undefined);
      await ferret.stop('SIGKILL');
    }
  });
});

describe('a command that waited for a connection of the pool past its bound (waitQueueTimeoutMS)', () => {
  it('is an unavailable database that timed out, as the answer that never came is', async () => {
    // One connection, held by an insert the proxy never forwards; the next command waits for it in the pool.
    const mongo = new URL(inject('mongoUrl'));
    const proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
    const conn = mongoose.createConnection(proxy.url('waitqueue'), {
      maxPoolSize: 1,
      waitQueueTimeoutMS: 300,
      socketTimeoutMS: 300,
      bufferCommands: false,
    });
    try {
      await conn.asPromise();
      const things = conn.db!.collection('things');
      const held = proxy.holdNext('insert', 'things');
      const stuck = things.insertOne({ n: 1 }).then(
        () => null,
        (err: unknown) => err,
      );
      await held;
      const waited = await things.findOne({ n: 1 }).then(
        () => null,
        (err: unknown) => err,
      );
      const answer = await stuck;
      expect([(waited as Error | null)?.name, (answer as Error | null)?.name]).toEqual([
        'MongoWaitQueueTimeoutError',
        'MongoNetworkTimeoutError',
      ]);
      expect([waited, answer].map((e) => [isDatabaseUnavailable(e), isDatabaseTimeout(e)])).toEqual([
        [true, true],
        [true, true],
      ]);
      // An outage that is not a timeout is told apart.
      expect(isDatabaseTimeout(network())).toBe(false);
    } finally {
      proxy.release();
      await conn.close().catch(() => undefined);
      await proxy.close();
    }
  });
});
