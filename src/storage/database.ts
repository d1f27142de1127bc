import type { Connection } from 'mongoose';
import { describeServer, serverRefusal } from '../infra/database-server.js';
import { connectDatabase } from '../infra/mongo.js';
import { modelsFor, syncSchema, type Models } from './models/index.js';

/** One connection and the models bound to it: what storage is built on (nothing outside src/storage/ sees it). */
export type Database = { conn: Connection; models: Models; close: () => Promise<void> };

/**
 * Opens one connection (see `connectDatabase`) and its models, and creates whatever of the schema is missing.
 * Refuses, after creating the schema, a server it must not run on (`serverRefusal`).
 */
export async function openDatabase(config: Parameters<typeof connectDatabase>[0]): Promise<Database> {
  const conn = await connectDatabase(config);
  const models = modelsFor(conn);
  try {
    await syncSchema(models);
    const server = await describeServer(conn.db!);
    const refusal = serverRefusal(server, config.MONGO_MAX_POOL_SIZE, `${conn.host}:${conn.port}`);
    if (refusal) throw new Error(refusal);
  } catch (err) {
    // The caller gets no handle to close: an open connection would keep the process alive after the error.
    await conn.close().catch(() => undefined);
    throw err;
  }
  return { conn, models, close: () => conn.close() };
}
