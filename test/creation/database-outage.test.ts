import { createStorage, type Storage } from '../../src/storage/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Operations } from '../../src/use-cases/admin/operations.js';
import type { Config } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { TOKEN_MUTATION } from '../support/app.js';
import { testConfig } from '../support/env.js';
import { freePort, startFerretDb, waitForPort, type LocalServer } from '../support/processes.js';
import { childEnv, startProcess, type Child } from './processes.js';
import { accountPayload, SUPPLIER, TEAM, until } from './support.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { workerConnection } from '../../src/infra/redis.js';

// A database server of its own (FerretDB on its own port and SQLite directory), killed while stages, creates
// and transaction imports are in flight, then started again on the same port and data. The service runs as
// its own `web` and `worker` processes and is driven over HTTP only; neither is restarted.

let dbDir: string;
let ferret: LocalServer;
let db: Database;
let storage: Storage;
let web: Child;
let worker: Child;
let base: string;
let headers: Record<string, string>;
let apiKey: string;
let config: Config;

/**
 * What is stored, read generically: the one place in this test that knows the storage model. Per account:
 * how many accounts its import process has, how many copies of each given transaction id, each ledger's
 * balance and the signed total of the given transactions stored on it (in cents).
 */
async function stored(externals: string[], transactionIds: string[]) {
  const { Account } = db.models;
  const journal = storage.journal;
  const wanted = new Set(transactionIds);
  const accountsPerProcess: Record<string, number> = {};
  const copies: Record<string, number> = {};
  const balances: Record<string, number> = {};
  const importedMinor: Record<string, number> = {};
  for (const external of externals) {
    const accounts = await Account.find({ importSupplier: SUPPLIER, externalAccountNumber: external })
      .select({ _id: 1 })
      .lean();
    accountsPerProcess[external] = accounts.length;
    for (const account of accounts) {
      const history = await journal.history(account._id);
      if (!history) continue;
      for (const ledger of history.head.ledgers) balances[`${external}/${ledger.code}`] = ledger.balanceMinor;
      for (const txn of history.transactions) {
        if (!wanted.has(txn.transactionId)) continue;
        copies[txn.transactionId] = (copies[txn.transactionId] ?? 0) + 1;
        const key = `${external}/${txn.ledgerCode}`;
        importedMinor[key] = (importedMinor[key] ?? 0) + txn.signedMinor;
      }
    }
  }
  return { accountsPerProcess, copies, balances, importedMinor };
}

type Kind = 'stage' | 'create' | 'transactions';
type Phase = 'before' | 'down' | 'after';
type Answer = {
  kind: Kind;
  key: string;
  phase: Phase;
  status: number;
  code: string | undefined;
  retryAfter: string | null;
  ms: number;
  body: unknown;
};

let phase: Phase = 'before';
const answers: Answer[] = [];

/** One HTTP request; a request that hangs past 30 s is recorded as status 0. */
async function call(kind: Kind, key: string, path: string, body?: unknown): Promise<Answer> {
  const started = Date.now();
  const startPhase = phase;
  let answer: Answer;
  try {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : null;
    answer = {
      kind,
      key,
      phase: startPhase,
      status: res.status,
      code: (parsed as { code?: string } | null)?.code,
      retryAfter: res.headers.get('retry-after'),
      ms: Date.now() - started,
      body: parsed,
    };
  } catch {
    answer = {
      kind,
      key,
      phase: startPhase,
      status: 0,
      code: undefined,
      retryAfter: null,
      ms: 0,
      body: null,
    };
  }
  answers.push(answer);
  return answer;
}

const stage = (external: string) =>
  call(
    'stage',
    external,
    '/v1/data-import/account-import-process/create-or-update/',
    accountPayload(external),
  );
const create = (external: string) =>
  call('create', external, '/v1/data-import/account-import-process/process/', {
    external_account_number: external,
    import_supplier_code: SUPPLIER,
    operations_team_name: TEAM,
  });
/** A batch of two transactions with ids of its own, on the account's first ledger. */
const batchIds = (batch: string) => [`${batch}-PAY`, `${batch}-FEE`];
const importBatch = (external: string, batch: string) => {
  const [pay, fee] = batchIds(batch);
  return call('transactions', batch, '/v1/data-import/transactions/create/', {
    import_supplier: SUPPLIER,
    external_account_number: external,
    transactions: [
      {
        transaction_id: pay,
        transaction_date: '2025-06-10',
        amount: '42.00',
        type: 'PAYMENT',
        payment_type: 'BANK_TRANSFER',
        reference: `REF-${pay}`,
      },
      {
        transaction_id: fee,
        transaction_date: '2025-06-12',
        amount: '3.50',
        type: 'CHARGE',
        reason: 'LATE_PAYMENT_FEE',
      },
    ],
  });
};
const created = (a: Answer) => a.status === 201 || a.code === 'account_import_process_already_imported';
/** Acknowledged: a 2xx, or (for a create) "already imported", which tells the account exists. */
const ok = (a: Answer) => a.status === 200 || a.status === 201 || (a.kind === 'create' && created(a));
const acknowledged = (kind: Kind, key: string) =>
  answers.some((a) => a.kind === kind && a.key === key && ok(a));
const readiness = async () => {
  const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: (await res.json()) as { checks: { database: string } } };
};

beforeAll(async () => {
  dbDir = mkdtempSync(join(tmpdir(), 'ferretdb-outage-'));
  ferret = await startFerretDb({ dir: dbDir });
  config = testConfig({ TEST_LABEL: 'dbout', MONGO_URL: `${ferret.url}dbout` });
  db = await openDatabase(config);
  storage = createStorage(db, { config });
  const ops = new Operations(storage, config.API_KEY_HASH_SECRET);
  apiKey = (await ops.createOrganisation('Outage Energía')).api_key;
  await ops.createSupplier(SUPPLIER, 'Outage Energía', { documentRoot: 'migrations/outage' });
  await ops.ensureTeam(TEAM);

  const port = await freePort();
  const env = childEnv(config, { ACCOUNT_CREATION_WAIT_MS: '20000' });
  web = startProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' });
  worker = startProcess('worker', { ...env, WORKER_CONCURRENCY: '5' });
  await waitForPort(port);
  base = `http://127.0.0.1:${port}`;
  const res = await fetch(`${base}/v1/graphql/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: TOKEN_MUTATION, variables: { input: { APIKey: apiKey } } }),
  });
  const token = ((await res.json()) as { data: { obtainKrakenToken: { token: string } } }).data
    .obtainKrakenToken.token;
  headers = { authorization: `Token ${token}` };
}, 60_000);

/** Answers by phase, kind, status and code, with the slowest of each: printed at the end, pass or fail. */
function summary(): string {
  const groups: Record<string, { n: number; maxMs: number }> = {};
  for (const a of answers) {
    const entry = (groups[`${a.phase} ${a.kind} ${a.status} ${a.code ?? ''}`] ??= { n: 0, maxMs: 0 });
    entry.n++;
    entry.maxMs = Math.max(entry.maxMs, a.ms);
  }
  return Object.entries(groups)
    .map(([key, { n, maxMs }]) => `  ${key}: ${n} (slowest ${maxMs} ms)`)
    .join('\n');
}

afterAll(async () => {
  console.info(`database outage, answers by phase, kind, status and code:\n${summary()}`);
  await web?.stop();
  await worker?.stop();
  await db?.close();
  await ferret?.stop();
  if (dbDir) rmSync(dbDir, { recursive: true, force: true });
});

it(
  'answers fast 503s while the database is down, then proceeds without restarting web or worker; nothing acknowledged is lost or duplicated',
  { timeout: 600_000 },
  async () => {
    // Accounts staged and (two of them) created before the outage; the rest are created during the load.
    const prepared = Array.from({ length: 16 }, (_, i) => `DBOUT-P${String(i).padStart(2, '0')}`);
    for (const ext of prepared) expect((await stage(ext)).status).toBe(201);
    const withTransactions = prepared.slice(0, 2);
    for (const ext of withTransactions) expect((await create(ext)).status).toBe(201);
    const before = await stored(withTransactions, []);

    // The load: one client staging new accounts, two creating the prepared ones, two importing transactions.
    let running = true;
    const staged: string[] = [];
    const batches: Array<{ external: string; batch: string }> = [];
    const creating = new Set<string>();
    const pace = (a: Answer) => (ok(a) ? Promise.resolve() : new Promise((r) => setTimeout(r, 100)));
    const loops = [
      (async () => {
        for (let n = 0; running; n++) {
          const ext = `DBOUT-S${String(n).padStart(3, '0')}`;
          staged.push(ext);
          await pace(await stage(ext));
        }
      })(),
      ...[0, 1].map(async () => {
        for (let turn = 0; running; turn++) {
          // Accounts staged (before, or acknowledged during the load) and not created yet, one at a time each.
          const pending = [...prepared.slice(2), ...staged.filter((e) => acknowledged('stage', e))].filter(
            (e) => !creating.has(e) && !answers.some((a) => a.kind === 'create' && a.key === e && created(a)),
          );
          const ext = pending[turn % Math.max(pending.length, 1)];
          if (!ext) {
            await new Promise((r) => setTimeout(r, 100));
            continue;
          }
          creating.add(ext);
          await pace(await create(ext));
          creating.delete(ext);
        }
      }),
      ...withTransactions.map(async (external) => {
        for (let n = 0; running; n++) {
          const batch = `${external}-B${n}`;
          batches.push({ external, batch });
          await pace(await importBatch(external, batch));
        }
      }),
    ];
    const count = (kind: Kind, p: Phase, pred: (a: Answer) => boolean = () => true) =>
      answers.filter((a) => a.kind === kind && a.phase === p && pred(a)).length;
    const kinds: Kind[] = ['stage', 'create', 'transactions'];

    await until(
      async () => kinds.every((k) => count(k, 'before', ok) >= 2),
      'every kind of request to succeed before the outage',
      30_000,
    );
    expect((await readiness()).status).toBe(200);

    await ferret.stop('SIGKILL');
    phase = 'down';
    const downAt = Date.now();
    const notReady = await until(
      async () => {
        const r = await readiness();
        return r.status === 503 ? r : null;
      },
      '/readyz to answer 503',
      10_000,
    );
    expect(notReady.body.checks.database).toBe('down');
    // Liveness stays green: nothing for an orchestrator to restart.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    // The token mutation too: a GraphQL error with HTTP 503 and Retry-After, no internal message.
    const tokenStarted = Date.now();
    const tokenRes = await fetch(`${base}/v1/graphql/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: TOKEN_MUTATION, variables: { input: { APIKey: apiKey } } }),
      signal: AbortSignal.timeout(30_000),
    });
    expect(Date.now() - tokenStarted).toBeLessThan(4_000);
    expect(tokenRes.status).toBe(503);
    expect(tokenRes.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await tokenRes.json()).toEqual({
      data: null,
      errors: [
        expect.objectContaining({
          message: 'A backing service is unavailable. Retry shortly.',
          extensions: { errorCode: 'SERVICE_UNAVAILABLE' },
        }),
      ],
    });
    expect(Date.now() - downAt).toBeLessThan(5_000);
    await until(
      async () => kinds.every((k) => count(k, 'down') >= 3),
      'requests of every kind answered during the outage',
      30_000,
    );

    ferret = await startFerretDb({ port: ferret.port, dir: dbDir });
    phase = 'after';
    await until(async () => (await readiness()).status === 200, '/readyz to answer 200 again');
    await until(
      async () => kinds.every((k) => count(k, 'after', ok) >= 2),
      'every kind of request to succeed again',
      30_000,
    );
    running = false;
    await Promise.all(loops);

    // Every answer, whenever sent: a success or a fast 503 service_unavailable with Retry-After; never a 500 or a hang.
    // Save one: a create sent again while the job of its earlier try (answered 503: the API could not wait on
    // it) still holds the account's slot is told, rightly, account_import_in_progress (the client waits on it).
    const retriedWhileRunning = (a: Answer, i: number) =>
      a.kind === 'create' &&
      a.status === 400 &&
      a.code === 'account_import_in_progress' &&
      answers.slice(0, i).some((b) => b.kind === 'create' && b.key === a.key && b.status === 503);
    const failures = answers.filter((a, i) => !ok(a) && !retriedWhileRunning(a, i));
    expect(failures.length).toBeGreaterThan(0);
    for (const a of failures) {
      expect({ kind: a.kind, status: a.status, code: a.code }).toEqual({
        kind: a.kind,
        status: 503,
        code: 'service_unavailable',
      });
      expect(a.retryAfter).toMatch(/^\d+$/);
    }
    // A request in flight when the database went away may wait for a server selection in the worker and then in
    // the API, on a loaded machine (CI once read 6.1 s): well under the 20 s create wait, which would be a hang.
    const slowest = answers.reduce((a, b) => (b.ms > a.ms ? b : a));
    expect(slowest.ms, `slowest: ${slowest.kind} ${slowest.phase} ${slowest.status}`).toBeLessThan(10_000);
    // At most two waits for a reachable server (MONGO_SERVER_SELECTION_TIMEOUT_MS, 2 s): never the 20 s create wait.
    expect(Math.max(...answers.filter((a) => a.phase === 'down').map((a) => a.ms))).toBeLessThan(5_000);
    // The same processes served all of it.
    for (const child of [web, worker]) expect(child.proc.exitCode ?? child.proc.signalCode).toBeNull();

    // A client retrying what was not acknowledged, until it is.
    for (const ext of staged) {
      if (!acknowledged('stage', ext))
        await until(async () => ok(await stage(ext)), `stage of ${ext} after the outage`);
    }
    for (const ext of [...prepared, ...staged])
      await until(async () => created(await create(ext)), `creation of ${ext} after the outage`);
    for (const { external, batch } of batches) {
      const wasAcknowledged = acknowledged('transactions', batch);
      const again = await until(
        async () => {
          const a = await importBatch(external, batch);
          return a.status === 201 ? a : null;
        },
        `import of ${batch} after the outage`,
        20_000,
      );
      // An acknowledged batch is there: importing it again finds both transactions.
      if (wasAcknowledged)
        expect((again.body as { results: Array<{ status: string }> }).results.map((r) => r.status)).toEqual([
          'TRANSACTION_ALREADY_EXISTS',
          'TRANSACTION_ALREADY_EXISTS',
        ]);
    }

    // No create job failed or used up an attempt on the outage: those that met it waited and ran again.
    const connection = workerConnection(config);
    const queue = new Queue('account-creation', {
      connection,
      prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('account-creation'),
    });
    const jobs = await queue.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active']);
    expect(await queue.getFailedCount()).toBe(0);
    expect(jobs.filter((j) => j.attemptsMade > 1).map((j) => j.id)).toEqual([]);
    console.info(
      `database outage: ${jobs.filter((j) => j.attemptsStarted > 1).length} create jobs ran again after it`,
    );
    await queue.close();
    connection.disconnect();

    // One account per import process, each transaction once, and ledger balances that moved by exactly them.
    const externals = [...prepared, ...staged];
    const transactionIds = batches.flatMap(({ batch }) => batchIds(batch));
    const after = await stored(externals, transactionIds);
    expect(Object.entries(after.accountsPerProcess).filter(([, n]) => n !== 1)).toEqual([]);
    expect(Object.keys(after.copies).sort()).toEqual([...transactionIds].sort());
    expect(Object.entries(after.copies).filter(([, n]) => n !== 1)).toEqual([]);
    for (const [ledger, balance] of Object.entries(before.balances))
      expect({ ledger, balance: after.balances[ledger] }).toEqual({
        ledger,
        balance: balance + (after.importedMinor[ledger] ?? 0),
      });
  },
);
