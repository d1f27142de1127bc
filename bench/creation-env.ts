import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Operations } from '../src/admin/operations.js';
import { createApiServer } from '../src/api/instance.js';
import type { Config } from '../src/config.js';
import { openDatabase } from '../src/infra/mongo.js';
import { startWorkers } from '../src/workers/runtime.js';
import { graphqlToken } from '../test/support/app.js';
import { validAccountPayload } from '../test/domain/fixtures.js';
import { realisticAccountPayload } from '../test/domain/fixtures-realistic.js';

export const SUPPLIER = 'BENCH_CREATE';
export const TEAM = 'Bench Team';

/**
 * The accounts a benchmark sends. `realistic` is what migration teams send (about 50 KB, ~200 transactions
 * over two ledgers, 42 months of history; `BENCH_MONTHS` changes the history); `minimal` is the small valid
 * account of the tests (5.4 KB, 8 transactions), reported beside it for comparison.
 */
export type PayloadKind = 'realistic' | 'minimal';
export const PAYLOAD_KINDS = (process.env.BENCH_PAYLOADS ?? 'realistic,minimal')
  .split(',')
  .map((s) => s.trim()) as PayloadKind[];

export function accountTemplate(kind: PayloadKind, months = Number(process.env.BENCH_MONTHS ?? 42)) {
  return kind === 'realistic' ? realisticAccountPayload({ months }) : validAccountPayload();
}

/** An API server, in-process workers on their own connection, a tenant and a team, for creation benchmarks. */
export async function creationEnv(
  config: Config,
  options: { workers?: boolean; payload?: PayloadKind; months?: number } = {},
) {
  const template = accountTemplate(options.payload ?? 'realistic', options.months);
  const app: FastifyInstance = await createApiServer(config);
  await app.ready();
  const ops = new Operations(app.db.models, config.API_KEY_HASH_SECRET);
  const created = await ops.createOrganisation('Bench Org');
  await ops.createSupplier(SUPPLIER, 'Bench Org', { documentRoot: 'bench' });
  await ops.ensureTeam(TEAM);
  const token = (await graphqlToken(app, { APIKey: created.api_key })).body.data!.obtainKrakenToken.token;
  const headers = { authorization: `Token ${token}`, 'content-type': 'application/json' };
  const workerDb = options.workers === false ? null : await openDatabase(config.MONGO_URL);
  const workers = workerDb ? startWorkers({ config, db: workerDb, log: pino({ level: 'silent' }) }) : null;
  const payload = (external: string) =>
    JSON.stringify({
      ...template,
      import_supplier: SUPPLIER,
      external_account_number: external,
    });
  const stage = (external: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/create-or-update/',
      headers,
      payload: payload(external),
    });
  const create = (external: string) =>
    app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/process/',
      headers,
      payload: JSON.stringify({
        external_account_number: external,
        import_supplier_code: SUPPLIER,
        operations_team_name: TEAM,
      }),
    });
  return {
    app,
    template,
    workers,
    workerDb,
    headers,
    stage,
    create,
    async close() {
      await workers?.close();
      await workerDb?.close();
      await app.db.conn.dropDatabase();
      await app.close();
    },
  };
}

/** Runs `fn` over `items` with at most `concurrency` at once. */
export async function pool<T>(
  items: T[],
  concurrency: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}
