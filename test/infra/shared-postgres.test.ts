import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { stageAccount } from '../../src/use-cases/creation/staging.js';
import { createStorage } from '../../src/storage/index.js';
import { testConfig } from '../support/env.js';
import { Types } from 'mongoose';
import { processKey } from '../../src/storage/processes/process-key.js';
import type { LocalServer, PostgresDatabase } from '../support/processes.js';
import { createPgDatabase, startFerretDbOnPostgres } from '../support/postgres.js';
import { until } from '../creation/support.js';

// One PostgreSQL database, several FerretDB processes on it (one per pod). Each FerretDB loads the list of
// collections once, at its first request: one that loaded it before the schema existed answers reads of
// those collections with nothing. The service creates every collection at boot and refuses to start on a
// FerretDB that does not list them.
let pg: PostgresDatabase;
const sidecars: LocalServer[] = [];
const opened: Database[] = [];
const DB = 'shared_pg';

const open = async (sidecar: LocalServer) => {
  const db = await openDatabase({
    MONGO_URL: `mongodb://127.0.0.1:${sidecar.port}/${DB}`,
    MONGO_SERVER_SELECTION_TIMEOUT_MS: 10_000,
    // Below the sidecars' pool_max_conns (50 by default): a process refuses to start otherwise.
    MONGO_MAX_POOL_SIZE: 40,
  });
  opened.push(db);
  return db;
};
const sidecar = async (postgresqlUrl = pg.url) => {
  const s = await startFerretDbOnPostgres(postgresqlUrl);
  sidecars.push(s);
  return s;
};

beforeAll(async () => {
  pg = await createPgDatabase('test_shared');
});
afterAll(async () => {
  for (const db of opened) await db.close();
  for (const s of sidecars) await s.stop();
  await pg?.drop();
});

it('pods whose FerretDB starts after the schema exists see each other’s writes, staged payloads included', async () => {
  const first = await open(await sidecar()); // creates the schema, as `import-admin db init` does
  const podA = await open(await sidecar());
  const podB = await open(await sidecar());
  const input = {
    organisationId: new Types.ObjectId(),
    importSupplier: 'SHARED',
    externalAccountNumber: 'PG-1',
    payload: JSON.stringify({ hello: 'world' }),
    now: new Date(),
  };
  const [storageA, storageB] = [podA, podB].map((db) => createStorage(db, { config: testConfig() }));
  expect((await stageAccount(storageA!, input)).status).toBe('created');
  expect((await storageB!.processes.loadStaged(processKey('SHARED', 'PG-1')))?.text).toBe(input.payload);
  expect(await first.models.AccountImportProcess.countDocuments()).toBe(1);
});

it('a FerretDB that loaded its collection list before the schema existed is refused at boot, by name', async () => {
  const stale = await sidecar();
  // Its first request, on a database of its own name that has no schema yet, loads its list of collections.
  const early = await openDatabaseRaw(stale, 'stale_pg');
  await early.close();
  const fresh = await sidecar();
  await openWith(fresh, 'stale_pg'); // the schema, created through another FerretDB
  const refused = await openWith(stale, 'stale_pg').catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(Error);
  // The FerretDB fails creating what exists (PostgreSQL says so): the service names the collection and the
  // remedy instead of serving empty reads.
  expect((refused as Error).message).toMatch(
    /does not know the collection "[a-z_]+".*Restart that FerretDB/s,
  );
});

it('a pod with fewer database connections than its FerretDB has PostgreSQL connections never deadlocks it', async () => {
  // A FerretDB v1 update holds a PostgreSQL connection while it waits for a second one: with as many updates in
  // flight as its pool has connections (here 4), it waits for ever. MONGO_MAX_POOL_SIZE below the pool
  // (here 3) bounds the updates in flight, so 200 concurrent updates all finish.
  const url = new URL(pg.url);
  url.searchParams.set('pool_max_conns', '4');
  const small = await sidecar(url.toString());
  const db = await openDatabase({
    MONGO_URL: `mongodb://127.0.0.1:${small.port}/pool_pg`,
    MONGO_SERVER_SELECTION_TIMEOUT_MS: 10_000,
    MONGO_MAX_POOL_SIZE: 3,
  });
  opened.push(db);
  const collection = db.conn.db!.collection<{ _id: string; n: number }>('pool_updates');
  await collection.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: `doc-${i}`, n: 0 })));
  let done = 0;
  const updates = Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      collection.updateOne({ _id: `doc-${i}` }, { $set: { n: i } }).then(() => done++),
    ),
  );
  await until(
    async () => done === 200,
    `200 updates through a FerretDB with 4 PostgreSQL connections (${done} done)`,
  );
  await updates;
  const docs = await collection.find().sort({ n: 1 }).toArray();
  expect(docs.map((d) => d.n)).toEqual(Array.from({ length: 200 }, (_, i) => i));
});

async function openWith(s: LocalServer, name: string) {
  const db = await openDatabase({
    MONGO_URL: `mongodb://127.0.0.1:${s.port}/${name}`,
    MONGO_SERVER_SELECTION_TIMEOUT_MS: 10_000,
    // Below the sidecars' pool_max_conns (50 by default): a process refuses to start otherwise.
    MONGO_MAX_POOL_SIZE: 40,
  });
  opened.push(db);
  return db;
}

/** A plain connection (no schema creation): a request that makes FerretDB load its list of collections. */
async function openDatabaseRaw(s: LocalServer, name: string) {
  const { default: mongoose } = await import('mongoose');
  const conn = await mongoose.createConnection(`mongodb://127.0.0.1:${s.port}/${name}`).asPromise();
  await conn.db!.listCollections().toArray();
  return conn;
}
