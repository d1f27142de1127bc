import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Types } from 'mongoose';
import { Operations } from '../../src/admin/operations.js';
import { createApiServer } from '../../src/api/instance.js';
import type { Config } from '../../src/config.js';
import { accountIdFor } from '../../src/creation/create-account.js';
import { ledgerIdFor } from '../../src/models/record-ids.js';
import { graphqlToken } from '../../test/support/app.js';
import { latencySummary, round, type Scenario } from '../support.js';

const BATCH = 100;
const SINGLE_BATCHES = 20;
const SINGLE_CONCURRENCY = 4;
const ACCOUNTS = 100;
const BATCHES_PER_ACCOUNT = 1;
const MULTI_CONCURRENCY = 10;
const SUPPLIER = 'BENCH_TXN';

/** A created account (process marked imported, Account, one ledger) with the `_id`s the creation worker gives them. */
async function seedAccount(app: FastifyInstance, organisationId: Types.ObjectId, external: string) {
  const { Account, AccountImportProcess, Ledger } = app.db.models;
  const number = `A-${randomBytes(4).toString('hex').toUpperCase()}`;
  const process = await AccountImportProcess.create({
    organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
    stagedAt: new Date(),
    krakenAccountNumber: number,
    accountCreatedAt: new Date(),
  });
  const account = await Account.create({
    _id: accountIdFor(process._id),
    number,
    organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
    processId: process._id,
    operationsTeamId: new Types.ObjectId(),
    accountType: 'DOMESTIC',
    billingName: 'Bench',
  });
  await Ledger.create({
    _id: ledgerIdFor(account._id, 'ELECTRICITY'),
    accountId: account._id,
    ledgerCode: 'ELECTRICITY',
    position: 0,
    lastStatementBalanceMinor: 0,
    lastStatementClosingDate: '2025-05-31',
    openPeriodStart: '2025-06-01',
    balanceMinor: 0,
  });
  return account._id;
}

/** Every other transaction is dated before the open period, so re-dating and the pinned note are exercised too. */
function batch(external: string, prefix: string) {
  const transactions = Array.from({ length: BATCH }, (_, i) =>
    i % 2
      ? {
          transaction_id: `${prefix}-${i}`,
          transaction_date: '2025-06-10',
          amount: '1.11',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
          reference: `R${i}`,
        }
      : {
          transaction_id: `${prefix}-${i}`,
          transaction_date: '2025-05-10',
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
) {
  const latencies: number[] = [];
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

const scenario: Scenario = {
  name: 'transactions',
  description:
    `POST transactions/create in batches of ${BATCH} (half re-dated into the open period): ${SINGLE_BATCHES} batches onto one account ` +
    `(${SINGLE_CONCURRENCY} in flight), then ${BATCHES_PER_ACCOUNT} batches onto each of ${ACCOUNTS} accounts (${MULTI_CONCURRENCY} in flight); balances checked`,
  async run(env) {
    // Each phase gets its own database, so the second does not pay for the first one's rows.
    const one = await withApp(env.config({ LOG_LEVEL: 'warn' }), async ({ url, token, seed, app }) => {
      const accountId = await seed('ONE');
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
      const ledger = await app.db.models.Ledger.findOne({ accountId }).lean();
      if (ledger?.balanceMinor !== SINGLE_BATCHES * EXPECTED_PER_BATCH_MINOR)
        throw new Error(`balance ${ledger?.balanceMinor} is not exact`);
      return { first_half: firstHalf, second_half: secondHalf };
    });
    const many = await withApp(env.config({ LOG_LEVEL: 'warn' }), async ({ url, token, seed, app }) => {
      const externals = Array.from({ length: ACCOUNTS }, (_, i) => `MANY-${i}`);
      for (const external of externals) await seed(external);
      const jobs = Array.from({ length: BATCHES_PER_ACCOUNT }, (_, b) =>
        externals.map((external) => ({ external, prefix: `M${b}` })),
      ).flat();
      const result = await runBatches(url, token, jobs, MULTI_CONCURRENCY);
      const balances = await app.db.models.Ledger.find({}, { balanceMinor: 1 }).lean();
      if (
        balances.length !== ACCOUNTS ||
        balances.some((l) => l.balanceMinor !== BATCHES_PER_ACCOUNT * EXPECTED_PER_BATCH_MINOR)
      )
        throw new Error('balances are not exact');
      return result;
    });
    return { one_account: one, across_accounts: many, balances_exact: true };
  },
};

type Harness = {
  app: FastifyInstance;
  url: string;
  token: string;
  seed: (external: string) => Promise<Types.ObjectId>;
};

async function withApp<T>(config: Config, fn: (h: Harness) => Promise<T>): Promise<T> {
  const app = await createApiServer(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const ops = new Operations(app.db.models, config.API_KEY_HASH_SECRET);
    const org = await ops.createOrganisation('Bench Org');
    await ops.createSupplier(SUPPLIER, 'Bench Org');
    const organisationId = new Types.ObjectId(org.organisation.id);
    const token = (await graphqlToken(app, { APIKey: org.api_key })).body.data!.obtainKrakenToken.token;
    const address = app.server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/data-import/transactions/create/`;
    return await fn({ app, url, token, seed: (external) => seedAccount(app, organisationId, external) });
  } finally {
    await app.db.conn.dropDatabase();
    await app.close();
  }
}
export default scenario;
