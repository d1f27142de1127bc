import mongoose, { type Connection } from 'mongoose';
import { withTimeout } from './timeout.js';
import { modelsFor, syncIndexes, type Models } from '../models/index.js';

export type Database = { conn: Connection; models: Models; close: () => Promise<void> };

/** Opens one connection and its models. Fails fast when the server is unreachable at boot. */
export async function openDatabase(url: string): Promise<Database> {
  const conn = mongoose.createConnection(url, {
    serverSelectionTimeoutMS: 5_000,
    maxPoolSize: 50,
    autoIndex: false,
  });
  await conn.asPromise();
  const models = modelsFor(conn);
  await syncIndexes(models);
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
