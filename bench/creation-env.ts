import { Agent, request } from 'node:http';
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
  const workerDb = options.workers === false ? null : await openDatabase(config);
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

type Timed = { status: number; ms: number; body: string };

/**
 * Stage + create over real HTTP (node:http with keep-alive: a lighter load generator than fetch, so it takes
 * less of the machine from the service it measures), spread round-robin over one or more web processes. A
 * 429 (the creation limit; should not happen at exactly the limit) is retried after a short pause and counted.
 */
export function httpCreationClient(options: {
  ports: number[];
  headers: Record<string, string>;
  template: object;
  inFlight: number;
}) {
  const agent = new Agent({ keepAlive: true, maxSockets: options.inFlight });
  let turn = 0;
  const post = (path: string, body: string, port: number): Promise<Timed> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const req = request(
        `http://127.0.0.1:${port}/v1/data-import/account-import-process/${path}/`,
        {
          method: 'POST',
          agent,
          headers: { ...options.headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString(),
              ms: performance.now() - t0,
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const client = {
    retried429: 0,
    retried503: 0,
    /** Stages then creates one account (through the next web in turn), recording both latencies. */
    async stageAndCreate(ext: string, stageMs: number[] = [], createMs: number[] = []) {
      const port = options.ports[turn++ % options.ports.length]!;
      const stageBody = JSON.stringify({
        ...options.template,
        import_supplier: SUPPLIER,
        external_account_number: ext,
      });
      let staged = await post('create-or-update', stageBody, port);
      while (staged.status === 503 && client.retried503 < 100) {
        client.retried503++;
        if (client.retried503 === 1) console.warn(`  first 503 (stage ${ext}): ${staged.body}`);
        await new Promise((r) => setTimeout(r, 1000));
        staged = await post('create-or-update', stageBody, port);
      }
      if (staged.status !== 201) throw new Error(`stage ${ext}: ${staged.status} ${staged.body}`);
      stageMs.push(staged.ms);
      const body = JSON.stringify({
        external_account_number: ext,
        import_supplier_code: SUPPLIER,
        operations_team_name: TEAM,
      });
      for (;;) {
        const created = await post('process', body, port);
        if (created.status === 429) {
          client.retried429++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        // A backing service that did not answer in time (a real client waits out Retry-After and sends again;
        // the create is idempotent). Counted: a run with any is reported, not hidden.
        if (created.status === 503 && client.retried503 < 100) {
          client.retried503++;
          if (client.retried503 === 1) console.warn(`  first 503 (${ext}): ${created.body}`);
          await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        if (created.status !== 201) throw new Error(`create ${ext}: ${created.status} ${created.body}`);
        createMs.push(created.ms);
        return;
      }
    },
    close: () => agent.destroy(),
  };
  return client;
}

/** Documents in every collection of the database (what a run wrote, the tenant's few included). */
export async function documentCount(db: import('mongoose').Connection): Promise<number> {
  let total = 0;
  for (const c of await db.db!.listCollections().toArray())
    total += await db.db!.collection(c.name).countDocuments();
  return total;
}
