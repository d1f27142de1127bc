import type { FastifyInstance } from 'fastify';
import type { Types } from 'mongoose';
import type { Config } from '../../src/config.js';
import { createAccount } from '../../src/use-cases/creation/from-process.js';
import { accountIdFor } from '../../src/storage/records/created-accounts.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { creationEnv, type PayloadKind } from '../creation-env.js';
import { cpuMeter, latencySummary, round, type BenchEnv, type Scenario } from '../support.js';

const BATCH = 100;
const SINGLE_BATCHES = 20;
const SINGLE_CONCURRENCY = 4;
const ACCOUNTS = 100;
/** Rounds of one batch onto every account: the first warms up, the rest are reported (their median too). */
const ROUNDS = 6;
const MULTI_CONCURRENCY = 10;
const SUPPLIER = 'BENCH_CREATE';

/** The open period of the accounts' first ledger: batches are dated inside it, or before it to be re-dated. */
let openPeriodStart = '';

/** Every other transaction is dated before the open period, so re-dating and the pinned note are exercised too. */
function batch(external: string, prefix: string) {
  const inside = openPeriodStart;
  const before = new Date(Date.parse(`${openPeriodStart}T00:00:00Z`) - 20 * 86_400_000)
    .toISOString()
    .slice(0, 10);
  const transactions = Array.from({ length: BATCH }, (_, i) =>
    i % 2
      ? {
          transaction_id: `${prefix}-${i}`,
          transaction_date: inside,
          amount: '1.11',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
          reference: `R${i}`,
        }
      : {
          transaction_id: `${prefix}-${i}`,
          transaction_date: before,
          amount: '0.37',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
  );
  return JSON.stringify({ import_supplier: SUPPLIER, external_account_number: external, transactions });
}
const EXPECTED_PER_BATCH_MINOR = (BATCH / 2) * 111 - (BATCH / 2) * 37;

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function runBatches(
  url: string,
  token: string,
  jobs: { external: string; prefix: string }[],
  concurrency: number,
  /** Where each batch's latency is added (a run's own by default). */
  latencies: number[] = [],
) {
  const started = performance.now();
  await pool(jobs, concurrency, async ({ external, prefix }) => {
    const t0 = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      body: batch(external, prefix),
      headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
    });
    if (res.status !== 201)
      throw new Error(`transactions/create answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
    latencies.push(performance.now() - t0);
  });
  const seconds = (performance.now() - started) / 1000;
  return {
    batches: jobs.length,
    transactions: jobs.length * BATCH,
    seconds: round(seconds, 2),
    transactions_per_s: round((jobs.length * BATCH) / seconds, 1),
    batch_latency: latencySummary(latencies),
  };
}

const KINDS = (process.env.BENCH_PAYLOADS ?? 'realistic,minimal').split(',') as PayloadKind[];

const scenario: Scenario = {
  name: 'transactions',
  description:
    `POST transactions/create in batches of ${BATCH} (half re-dated into the open period) onto accounts created from the ` +
    `realistic payload (and the minimal one beside it): ${SINGLE_BATCHES} batches onto one account (${SINGLE_CONCURRENCY} in flight), ` +
    `then ${ROUNDS} rounds of one batch onto each of ${ACCOUNTS} accounts (${MULTI_CONCURRENCY} in flight; the first warms up, the others are reported with their median); balances checked against the sum of the stored transactions`,
  async run(env) {
    const results: Record<string, unknown> = {};
    for (const kind of KINDS) results[kind] = await runKind(env, kind);
    return results;
  },
};

async function runKind(env: BenchEnv, kind: PayloadKind) {
  // Each phase gets its own database, so the second does not pay for the first one's rows.
  const one = await withApp(env.config({ LOG_LEVEL: 'warn' }), kind, async ({ url, token, seed, app }) => {
    const [accountId] = await seed(['ONE']);
    const before = await balanceOf(app, accountId!);
    const cpu = cpuMeter({ database: env.dbPid, api_and_client: process.pid });
    const half = SINGLE_BATCHES / 2;
    const firstHalf = await runBatches(
      url,
      token,
      Array.from({ length: half }, (_, b) => ({ external: 'ONE', prefix: `S${b}` })),
      SINGLE_CONCURRENCY,
    );
    const secondHalf = await runBatches(
      url,
      token,
      Array.from({ length: half }, (_, b) => ({ external: 'ONE', prefix: `S${b + half}` })),
      SINGLE_CONCURRENCY,
    );
    const { database, api_and_client: apiAndClient } = cpu.perItemMs(SINGLE_BATCHES);
    await checkBalance(app, accountId!, before + SINGLE_BATCHES * EXPECTED_PER_BATCH_MINOR);
    return {
      first_half: firstHalf,
      second_half: secondHalf,
      database_cpu_ms_per_batch: database,
      api_and_client_cpu_ms_per_batch: apiAndClient,
    };
  });
  const many = await withApp(env.config({ LOG_LEVEL: 'warn' }), kind, async ({ url, token, seed, app }) => {
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `MANY-${i}`);
    const ids = await seed(externals);
    const before = await Promise.all(ids.map((id) => balanceOf(app, id)));
    const roundOf = (r: number) => externals.map((external) => ({ external, prefix: `M${r}` }));
    await runBatches(url, token, roundOf(0), MULTI_CONCURRENCY);
    const cpu = cpuMeter({ database: env.dbPid, api_and_client: process.pid });
    const rounds = [];
    const latencies: number[] = [];
    for (let r = 1; r < ROUNDS; r++)
      rounds.push(await runBatches(url, token, roundOf(r), MULTI_CONCURRENCY, latencies));
    const batches = rounds.reduce((n, x) => n + x.batches, 0);
    const seconds = rounds.reduce((n, x) => n + x.seconds, 0);
    const { database, api_and_client: apiAndClient } = cpu.perItemMs(batches);
    for (const [i, id] of ids.entries())
      await checkBalance(app, id, before[i]! + ROUNDS * EXPECTED_PER_BATCH_MINOR);
    const rates = rounds.map((x) => x.transactions_per_s).sort((a, b) => a - b);
    const result = {
      batches,
      transactions: batches * BATCH,
      seconds: round(seconds, 2),
      transactions_per_s: round((batches * BATCH) / seconds, 1),
      median_round_transactions_per_s: rates[Math.floor(rates.length / 2)],
      rounds_transactions_per_s: rounds.map((x) => x.transactions_per_s),
      batch_latency: latencySummary(latencies),
      database_cpu_ms_per_batch: database,
      api_and_client_cpu_ms_per_batch: apiAndClient,
    };
    return result;
  });
  return { one_account: one, across_accounts: many, balances_exact: true };
}

/** The first ledger's balance, as the journal's head holds it. */
async function balanceOf(app: FastifyInstance, accountId: Types.ObjectId): Promise<number> {
  const head = await app.storage.journal.head(accountId);
  return head!.ledgers[0]!.balanceMinor;
}

/** The balance is what was expected, and equals the last statement balance plus every stored transaction that moves it. */
async function checkBalance(app: FastifyInstance, accountId: Types.ObjectId, expected: number) {
  const history = (await app.storage.journal.history(accountId))!;
  const ledger = history.head.ledgers[0]!;
  const summed = history.transactions
    .filter(
      (t) => t.ledgerCode === ledger.code && (t.origin === 'imported' || t.origin === 'current_statement'),
    )
    .reduce((sum, t) => sum + t.signedMinor, ledger.lastStatementBalanceMinor);
  if (ledger.balanceMinor !== expected || summed !== expected)
    throw new Error(`balance ${ledger.balanceMinor} (summed ${summed}) is not exactly ${expected}`);
}

type Harness = {
  app: FastifyInstance;
  url: string;
  token: string;
  /** Stages and creates accounts (in-process creation), returning their ids. */
  seed: (externals: string[]) => Promise<Types.ObjectId[]>;
};

async function withApp<T>(config: Config, kind: PayloadKind, fn: (h: Harness) => Promise<T>): Promise<T> {
  const e = await creationEnv(config, { workers: false, payload: kind });
  const { app } = e;
  await app.listen({ port: 0, host: '127.0.0.1' });
  openPeriodStart = e.template.ledgers[0]!.last_statement_closing_date;
  openPeriodStart = new Date(Date.parse(`${openPeriodStart}T00:00:00Z`) + 86_400_000)
    .toISOString()
    .slice(0, 10);
  try {
    const teamId = (await app.db.models.OperationsTeam.findOne().lean())!._id.toHexString();
    const token = e.headers.authorization.replace('Token ', '');
    const address = app.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/data-import/transactions/create/`;
    const seed = async (externals: string[]) => {
      for (const external of externals) {
        const staged = await e.stage(external);
        if (staged.statusCode !== 201) throw new Error(`stage: ${staged.statusCode} ${staged.body}`);
        const out = await createAccount(
          { storage: app.storage, config, clock: () => new Date() },
          {
            processId: processKey(SUPPLIER, external),
            operationsTeamId: teamId,
            dryRun: false,
            jobId: `seed-${external}`,
          },
        );
        if (!out.ok) throw new Error(`create: ${JSON.stringify(out)}`);
      }
      return externals.map((external) => accountIdFor(processKey(SUPPLIER, external)));
    };
    return await fn({ app, url, token, seed });
  } finally {
    await e.close();
  }
}
export default scenario;
