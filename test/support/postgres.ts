import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { startFerretDb, type LocalServer } from './processes.js';

/**
 * FerretDB on its PostgreSQL backend: a database of PostgreSQL of its own, and FerretDB processes on it (one
 * per pod, as sidecars). PostgreSQL: `TEST_PG_URL`, else this machine kind's server (127.0.0.1:5432, trust).
 */
export const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Creates a database of its own on PostgreSQL (psql), returns its URL and how to drop it. */
export function createPgDatabase(prefix: string): { url: string; drop: () => void } {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  execFileSync('psql', [PG_URL, '-qc', `CREATE DATABASE ${name}`], { stdio: 'ignore' });
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => execFileSync('psql', [PG_URL, '-qc', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]),
  };
}

/** A FerretDB process on the PostgreSQL backend (a pod's sidecar). */
export function startFerretDbOnPostgres(postgresqlUrl: string): Promise<LocalServer> {
  return startFerretDb({ postgresqlUrl });
}
