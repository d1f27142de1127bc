import { Agent, request } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Operations } from '../src/use-cases/admin/operations.js';
import { createApiServer } from '../src/api/http/instance.js';
import type { Config } from '../src/config.js';
import { openDatabase } from '../src/storage/database.js';
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
  // The bench keeps the database the app's storage is built on, to look at what was written (as tests do).
  const db = await openDatabase(config);
  const app: FastifyInstance = await createApiServer(config, { database: db });
  app.decorate('db', db);
  await app.ready();
  const ops = new Operations(app.storage, config.API_KEY_HASH_SECRET);
  /** An organisation with a supplier of its own: the headers its API calls carry. */
  const addTenant = async (org: string, supplier: string) => {
    const created = await ops.createOrganisation(org);
    await ops.createSupplier(supplier, org, { documentRoot: 'bench' });
    const token = (await graphqlToken(app, { APIKey: created.api_key })).body.data!.obtainKrakenToken.token;
    return { authorization: `Token ${token}`, 'content-type': 'application/json' };
  };
  const headers = await addTenant('Bench Org', SUPPLIER);
  await ops.ensureTeam(TEAM);
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
    addTenant,
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

/** The `code` of an error body (none: not one). */
function codeOf(body: string): string | null {
  try {
    return (JSON.parse(body) as { code?: string }).code ?? null;
  } catch {
    return null;
  }
}

/**
 * Stage + create over real HTTP (node:http with keep-alive: a lighter load generator than fetch, so it takes
 * less of the machine from the service it measures), spread round-robin over one or more web processes. A
 * 429 (the creation limit; should not happen at exactly the limit) is retried after a short pause and counted; a
 * create answered 503 is followed on the account's transfer status, or sent again, as the migration client does,
 * and counted (`retried_503`, `followed_after_503` in the results).
 */
export function httpCreationClient(options: {
  ports: number[];
  headers: Record<string, string>;
  template: object;
  inFlight: number;
}) {
  const agent = new Agent({ keepAlive: true, maxSockets: options.inFlight });
  let turn = 0;
  const call = (method: 'GET' | 'POST', path: string, body: string, port: number): Promise<Timed> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      const req = request(
        `http://127.0.0.1:${port}/v1/data-import/${path}/`,
        {
          method,
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
  const post = (path: string, body: string, port: number) =>
    call('POST', `account-import-process/${path}`, body, port);
  const client = {
    retried429: 0,
    retried503: 0,
    /** Creates answered 503 and followed to their end on the transfer status (left out of the latencies). */
    followed: 0,
    /**
     * Follows the account's creation on its transfer status: true once COMPLETED, false when the server knows of
     * none running (UNKNOWN: the create is to be sent again), as the migration client does.
     */
    async follow(ext: string, port: number): Promise<boolean> {
      client.followed++;
      const deadline = Date.now() + 5 * 60_000;
      for (;;) {
        const status = await call('GET', `account-transfer-status/${SUPPLIER}/${ext}`, '', port);
        const state = status.status === 200 ? (JSON.parse(status.body) as { status?: string }).status : null;
        if (state === 'COMPLETED') return true;
        if (state === 'UNKNOWN') return false;
        if (Date.now() > deadline)
          throw new Error(`create ${ext}: followed after a 503, status ${status.status} ${status.body}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
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
      // Whether a create of this account was answered 503: it may have gone on, or be going on, on the server.
      let pending = false;
      for (let round = 1; ; round++) {
        const created = await post('process', body, port);
        if (created.status === 429) {
          client.retried429++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const code = created.status === 201 ? null : codeOf(created.body);
        // A backing service that did not answer in time. Counted: a run with any is reported, not hidden. A
        // creation still running when the API stopped waiting is followed to its end on the transfer status, as
        // the migration client does; anything else is sent again after a pause (the create is idempotent).
        if (created.status === 503 && round < 10 && client.retried503 < 10_000) {
          client.retried503++;
          if (client.retried503 === 1) console.warn(`  first 503 (${ext}): ${created.body}`);
          pending = true;
          if (code === 'account_creation_pending') {
            if (await client.follow(ext, port)) return;
          } else await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        // Sent again after a 503: this client's own earlier create is running still, or has finished.
        if (
          pending &&
          created.status === 400 &&
          (code === 'account_import_in_progress' || code === 'account_import_process_already_imported')
        ) {
          if (await client.follow(ext, port)) return;
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
