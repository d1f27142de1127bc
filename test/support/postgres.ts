import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ferretdbBinary, freePort, waitForPort, type LocalServer } from './processes.js';

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
export async function startFerretDbOnPostgres(postgresqlUrl: string): Promise<LocalServer> {
  const bin = ferretdbBinary();
  if (!bin) throw new Error('FerretDB is not built: run scripts/ensure-ferretdb.sh');
  const port = await freePort();
  // FerretDB writes a small state file (its instance id): in a directory of its own, not the working one.
  const stateDir = mkdtempSync(join(tmpdir(), 'ferretdb-pg-'));
  const child = spawn(
    bin,
    [
      '--handler=postgresql',
      `--postgresql-url=${postgresqlUrl}`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${stateDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=ERROR',
    ],
    { stdio: 'ignore' },
  );
  await waitForPort(port);
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
