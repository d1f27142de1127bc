import mongoose, { type Connection } from 'mongoose';
import type { Config } from '../config.js';
import { withTimeout } from './timeout.js';
import { modelsFor, syncSchema, type Models } from '../models/index.js';

export type Database = { conn: Connection; models: Models; close: () => Promise<void> };

/**
 * Opens one connection and its models. Fails fast when the server is unreachable, at boot and afterwards:
 * no command buffering (mongoose would hold commands for 10 s while disconnected), and an operation waits at
 * most `MONGO_SERVER_SELECTION_TIMEOUT_MS` for a reachable server. The driver reconnects on its own.
 */
export async function openDatabase(
  config: Pick<Config, 'MONGO_URL' | 'MONGO_SERVER_SELECTION_TIMEOUT_MS' | 'MONGO_MAX_POOL_SIZE'>,
): Promise<Database> {
  const conn = mongoose.createConnection(config.MONGO_URL, {
    serverSelectionTimeoutMS: config.MONGO_SERVER_SELECTION_TIMEOUT_MS,
    bufferCommands: false,
    maxPoolSize: config.MONGO_MAX_POOL_SIZE,
    // The schema is created by syncSchema, in order and awaited, not by mongoose in the background.
    autoIndex: false,
    autoCreate: false,
  });
  await conn.asPromise();
  const models = modelsFor(conn);
  try {
    await syncSchema(models);
  } catch (err) {
    // The caller gets no handle to close: an open connection would keep the process alive after the error.
    await conn.close().catch(() => undefined);
    throw err;
  }
  return { conn, models, close: () => conn.close() };
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
