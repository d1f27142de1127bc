import type { mongo } from 'mongoose';

/**
 * What answers at MONGO_URL, as it says on the wire. FerretDB v1 adds `ferretdbVersion` to `buildInfo`; the
 * project's build (scripts/ensure-ferretdb.sh, scripts/ferretdb-build-info.patch) also `accountMigrationBuild`:
 * its revision, its handler and, on PostgreSQL, its pool's `pool_max_conns`. A stock build names its backend only
 * in its startup warnings (`getLog`), once it has reached that backend.
 */
export type DatabaseServer =
  | { kind: 'mongodb' }
  | {
      kind: 'ferretdb';
      version: string;
      /** `project`: the project's build, of the revision this code needs; `stock`: any other. */
      build: 'project' | 'stock';
      /** `postgresql`, `sqlite`, ...; null when it did not say. */
      handler: string | null;
      /** Its PostgreSQL pool's `pool_max_conns` (the project's build on PostgreSQL only). */
      poolMaxConns: number | null;
    };

/** The build's revision this code relies on (1: an update holds one PostgreSQL connection at a time). */
const BUILD_REVISION = 1;

export async function describeServer(db: mongo.Db): Promise<DatabaseServer> {
  const info = await db.admin().command({ buildInfo: 1 });
  if (typeof info.ferretdbVersion !== 'string') return { kind: 'mongodb' };
  const version = info.ferretdbVersion;
  const build = info.accountMigrationBuild as
    { revision?: unknown; handler?: unknown; postgresqlPoolMaxConns?: unknown } | undefined;
  if (typeof build?.revision === 'number' && build.revision >= BUILD_REVISION) {
    const handler = typeof build.handler === 'string' ? build.handler : null;
    const pool = Number(build.postgresqlPoolMaxConns);
    const poolMaxConns = handler === 'postgresql' && pool > 0 ? pool : null;
    return { kind: 'ferretdb', version, build: 'project', handler, poolMaxConns };
  }
  return { kind: 'ferretdb', version, build: 'stock', handler: await backendOf(db), poolMaxConns: null };
}

/** "Powered by FerretDB v1.24.2 and PostgreSQL 16.4.": the backend's name, lower case, or null. */
async function backendOf(db: mongo.Db): Promise<string | null> {
  const answer = await db
    .admin()
    .command({ getLog: 'startupWarnings' })
    .catch(() => null);
  const lines: unknown[] = Array.isArray(answer?.log) ? answer.log : [];
  for (const line of lines) {
    let message: unknown;
    try {
      message = (JSON.parse(String(line)) as { msg?: unknown }).msg;
    } catch {
      continue;
    }
    const match = /^Powered by FerretDB \S+ and (\w+)/.exec(String(message));
    if (match) return match[1]!.toLowerCase();
  }
  return null;
}

/**
 * Why this process must not start on that server with a pool of `maxPoolSize`, with the remedy; null when it
 * may. Only FerretDB v1 over PostgreSQL is refused: a stock build (its update keeps a PostgreSQL connection per
 * statement until the command ends, so the service's grouped updates wait for ever, whatever the pools), or the
 * project's build with a pool of this process's that is not below its own (a command that holds two, like
 * `findAndModify`, then waits for ever once as many are in flight as it has connections). MongoDB, FerretDB on
 * SQLite and other FerretDB versions pass.
 */
export function serverRefusal(server: DatabaseServer, maxPoolSize: number, where: string): string | null {
  if (server.kind === 'mongodb' || !server.version.startsWith('v1.')) return null;
  if (server.build === 'stock') {
    if (server.handler === 'sqlite') return null;
    const on =
      server.handler === 'postgresql'
        ? 'on PostgreSQL'
        : `on ${server.handler === null ? 'a backend it did not name' : server.handler}`;
    return (
      `The FerretDB at ${where} is a stock FerretDB ${server.version} ${on}, not the project's build: its update ` +
      `keeps each statement's read (a PostgreSQL connection) open until the command ends, so one grouped update ` +
      `of as many statements as it has connections waits for ever. Run the project's build there ` +
      `(scripts/ensure-ferretdb.sh builds .tools/bin/ferretdb; README, "A server database").`
    );
  }
  if (server.handler !== 'postgresql' || server.poolMaxConns === null) return null;
  if (maxPoolSize < server.poolMaxConns) return null;
  return (
    `MONGO_MAX_POOL_SIZE=${maxPoolSize} is not below the PostgreSQL pool of the FerretDB at ${where} ` +
    `(pool_max_conns=${server.poolMaxConns}): with as many commands in flight as it has connections, one that ` +
    `holds two (findAndModify) waits for ever. Set MONGO_MAX_POOL_SIZE below ${server.poolMaxConns}, with the ` +
    `pools of all the processes that share that FerretDB together below it too, or raise pool_max_conns in its ` +
    `--postgresql-url (and PostgreSQL's max_connections above the sidecars' sum).`
  );
}
