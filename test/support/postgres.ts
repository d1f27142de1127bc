import { randomBytes } from 'node:crypto';
import {
  createPostgresDatabase,
  startFerretDb,
  type LocalServer,
  type PostgresDatabase,
} from './processes.js';

/** PostgreSQL for FerretDB's PostgreSQL backend: `TEST_POSTGRES_URL`, else this machine kind's server. */
export const PG_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh database of its own on that server, named `<prefix>_<random>`. */
export function createPgDatabase(prefix: string): Promise<PostgresDatabase> {
  return createPostgresDatabase(PG_URL, `${prefix}_${randomBytes(4).toString('hex')}`);
}

/** A FerretDB process on the PostgreSQL backend (a pod's sidecar). */
export function startFerretDbOnPostgres(postgresqlUrl: string): Promise<LocalServer> {
  return startFerretDb({ postgresqlUrl });
}
