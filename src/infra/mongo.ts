import { tracingChannel } from 'node:diagnostics_channel';
import mongoose, { type Connection } from 'mongoose';
import { configSchema, type Config } from '../config.js';
import { withTimeout } from './timeout.js';

/**
 * Opens one connection. Fails fast when the server is unreachable, at boot and afterwards:
 * no command buffering (mongoose would hold commands for 10 s while disconnected), and an operation waits at
 * most `MONGO_SERVER_SELECTION_TIMEOUT_MS` for a reachable server. The driver reconnects on its own.
 * Every command is bounded by `MONGO_COMMAND_TIMEOUT_MS` twice over, client-side: its wait for a connection of
 * the pool, then its wait for the answer (a hung server, or a FerretDB waiting on its own pool, fails it instead
 * of holding the request). The models and the schema are storage's (`storage/database.ts`).
 */
export async function connectDatabase(
  config: Pick<Config, 'MONGO_URL' | 'MONGO_SERVER_SELECTION_TIMEOUT_MS' | 'MONGO_MAX_POOL_SIZE'> &
    Partial<Pick<Config, 'MONGO_COMMAND_TIMEOUT_MS'>>,
): Promise<Connection> {
  const commandTimeoutMs =
    config.MONGO_COMMAND_TIMEOUT_MS ?? configSchema.shape.MONGO_COMMAND_TIMEOUT_MS.parse(undefined);
  const conn = mongoose.createConnection(config.MONGO_URL, {
    serverSelectionTimeoutMS: config.MONGO_SERVER_SELECTION_TIMEOUT_MS,
    // The driver's timeoutMS does nothing in 7.x and FerretDB ignores maxTimeMS on writes: these two hold on
    // any server. A timed-out answer closes its connection only (the pool is not cleared).
    waitQueueTimeoutMS: commandTimeoutMs,
    socketTimeoutMS: commandTimeoutMs,
    bufferCommands: false,
    maxPoolSize: config.MONGO_MAX_POOL_SIZE,
    // The schema is created by syncSchema, in order and awaited, not by mongoose in the background.
    autoIndex: false,
    autoCreate: false,
  });
  nameFailedCollections(conn);
  await conn.asPromise();
  return conn;
}

/**
 * Writes on an unavailable database's error the collection and command it failed on, for the log lines that
 * report it (`failedCollection`). Mongoose reports a collection's operations that settle as promises on the
 * connection (`operation-end`), and a query's, aggregation's or cursor's read on its tracing channels (a find
 * fails in the cursor the collection returned).
 */
function nameFailedCollections(conn: Connection): void {
  conn.on('operation-end', (op: { collectionName?: string; method?: string; error?: unknown }) => {
    if (op.error !== undefined) nameFailure(op.error, op.collectionName, op.method);
  });
  if (tracing) return;
  tracing = true;
  for (const name of ['mongoose:query', 'mongoose:aggregate', 'mongoose:cursor:next'])
    tracingChannel(name).error.subscribe((message) => {
      const ctx = message as { error?: unknown; collection?: string; operation?: string };
      nameFailure(ctx.error, ctx.collection, ctx.operation);
    });
}
let tracing = false;

function nameFailure(err: unknown, collection: string | undefined, command: string | undefined): void {
  if (!(err instanceof Error) || !collection || failedCollection(err) || !isDatabaseUnavailable(err)) return;
  Object.assign(err, { collection, command });
}

/** The collection an unavailable database's error was met on (see nameFailedCollections), if known. */
export function failedCollection(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const { collection } = e as { collection?: unknown };
    if (typeof collection === 'string') return collection;
  }
  return undefined;
}

/**
 * A command that outlived MONGO_COMMAND_TIMEOUT_MS: its answer (the socket timed out; a bulk write stopped by
 * it copies its message) or its wait for a connection of the pool.
 */
export function isDatabaseTimeout(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (
      e instanceof mongoose.mongo.MongoNetworkTimeoutError ||
      e.name === 'MongoWaitQueueTimeoutError' ||
      (e.name === 'MongoBulkWriteError' && 'beforeHandshake' in e && / timed out$/.test(e.message))
    )
      return true;
  }
  return false;
}

export async function pingDatabase(conn: Connection, timeoutMs: number): Promise<void> {
  const db = conn.db;
  if (!db) throw new Error('database not connected');
  await withTimeout(db.admin().ping(), timeoutMs);
}

/** A duplicate-key error (E11000): a unique index refused the write, i.e. the record is already there. */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

/** Thrown where a step could not reach the database (e.g. a worker's job, heard of by the waiting API). */
export class DatabaseUnavailableError extends Error {
  constructor() {
    super('the database is unavailable');
    this.name = 'DatabaseUnavailableError';
  }
}

const { MongoNetworkError, MongoServerSelectionError, MongoNotConnectedError, MongoTopologyClosedError } =
  mongoose.mongo;

/** Socket failures: the driver lets some through unwrapped (EPIPE when the server went away mid-write). */
const SOCKET_ERROR_CODES: ReadonlySet<unknown> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

/**
 * FerretDB on PostgreSQL answering that it could not reach its PostgreSQL (down, restarting, out of
 * connections: SQLSTATE class 08, 53300 too_many_connections, 57P01–57P03 shutting down or starting up). The
 * wire answer is an ordinary server error, so its text is all there is to go by.
 */
const BACKEND_UNAVAILABLE =
  /failed to connect to `|too many clients already|the database system is (starting up|shutting down|in recovery mode)|SQLSTATE (08\w{3}|53300|57P0[123])/;

/**
 * The database could not be reached (no server to select, a connection refused, reset or closed, or FerretDB
 * could not reach its PostgreSQL): a retry later can succeed, so the API answers 503 and workers retry the job.
 * Bulk writes (insertMany) carry the driver error they stopped on as their own properties, so they are
 * recognised too.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (
      e instanceof DatabaseUnavailableError ||
      e instanceof MongoNetworkError ||
      e instanceof MongoServerSelectionError ||
      e instanceof MongoNotConnectedError ||
      e instanceof MongoTopologyClosedError ||
      // No connection of the pool freed up within MONGO_COMMAND_TIMEOUT_MS (the class is not exported).
      e.name === 'MongoWaitQueueTimeoutError' ||
      // A bulk write stopped by the driver copies that error's own properties, not its class: a network
      // error's `beforeHandshake`, a failed server selection's `reason` (the topology it found).
      (e.name === 'MongoBulkWriteError' && ('beforeHandshake' in e || 'reason' in e)) ||
      SOCKET_ERROR_CODES.has((e as { code?: unknown }).code) ||
      (/^Mongo(Server|BulkWrite)Error$/.test(e.name) && BACKEND_UNAVAILABLE.test(e.message))
    )
      return true;
  }
  return false;
}
