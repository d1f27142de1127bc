import { Agent, request } from 'node:http';
import { createApiServer } from '../../src/api/http/instance.js';
import { validateNotesImport, validateStatementsImport } from '../../src/domain/validation/index.js';
import { importNotes } from '../../src/use-cases/post-import/notes.js';
import { recordInstruction } from '../../src/use-cases/post-import/payment-instructions.js';
import { importStatements } from '../../src/use-cases/post-import/statements.js';
import { creationEnv, pool, SUPPLIER } from '../creation-env.js';
import { IMPORTED_TRANSACTIONS, seedAccount, seedContext } from '../reconciliation-seed.js';
import { commandMeter, cpuMeter, latencySummary, round, type Scenario } from '../support.js';

const ACCOUNTS = Number(process.env.BENCH_RECON_ACCOUNTS ?? 1_000);
const BATCH = 500;
const ROUNDS = Number(process.env.BENCH_RECON_ROUNDS ?? 5);
const SINGLE_READS = 200;
const SEED_CONCURRENCY = 16;

/**
 * Reconciliation's read-back (issue 21): `POST /v2/data-import/accounts/reconciliation/` in batches of 500 over
 * real HTTP (keep-alive) from an API server of its own (a process that wrote none of the accounts, so no journal
 * head is cached), on realistic accounts: the realistic payload's records as the creation writes them (its
 * journal's first entry, its notes), then what a migration adds through the post-import use cases (30
 * transactions, 2 statements, 2 notes, a payment instruction: five journal entries in all). p50 per batch and per
 * account, database commands and CPU per account; single `GET …/reconciliation/` reads for comparison.
 */
const scenario: Scenario = {
  name: 'reconciliation',
  description: `Reconciliation read-back of ${ACCOUNTS} realistic accounts in batches of ${BATCH} (${ROUNDS} rounds), and single reads`,
  async run(env) {
    const config = env.config();
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    let reader: Awaited<ReturnType<typeof createApiServer>> | null = null;
    try {
      const seedStart = performance.now();
      const expectedTransactions = await seed(e);
      const seedSeconds = round((performance.now() - seedStart) / 1000, 1);

      reader = await createApiServer(config);
      const address = new URL(await reader.listen({ port: 0, host: '127.0.0.1' }));
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const call = (method: 'GET' | 'POST', path: string, body?: string) =>
        new Promise<{ status: number; body: string; ms: number }>((resolve, reject) => {
          const t0 = performance.now();
          const req = request(
            { host: address.hostname, port: address.port, path, method, agent, headers: e.headers },
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

      const externals = Array.from({ length: ACCOUNTS }, (_, i) => external(i));
      const batches: string[][] = [];
      for (let i = 0; i < externals.length; i += BATCH) batches.push(externals.slice(i, i + BATCH));
      const batchMs: number[] = [];
      const accountMs: number[] = [];
      const commands = await commandMeter(env);
      const cpu = cpuMeter({ database: env.dbPid, service: process.pid });
      for (let r = 0; r < ROUNDS; r++) {
        for (const numbers of batches) {
          const res = await call(
            'POST',
            '/v2/data-import/accounts/reconciliation/',
            JSON.stringify({ import_supplier_code: SUPPLIER, external_account_numbers: numbers }),
          );
          if (res.status !== 200) throw new Error(`batch: ${res.status} ${res.body.slice(0, 300)}`);
          check(JSON.parse(res.body) as Results, numbers, expectedTransactions);
          batchMs.push(res.ms);
          accountMs.push(res.ms / numbers.length);
        }
      }
      const reads = ROUNDS * ACCOUNTS;
      const perAccountCommands = await commands.perItem(reads);
      const perAccountCpu = cpu.perItemMs(reads);

      const singleMs: number[] = [];
      for (let i = 0; i < SINGLE_READS; i++) {
        const res = await call(
          'GET',
          `/v2/data-import/accounts/${SUPPLIER}/${external(i % ACCOUNTS)}/reconciliation/`,
        );
        if (res.status !== 200) throw new Error(`single: ${res.status} ${res.body.slice(0, 300)}`);
        singleMs.push(res.ms);
      }
      agent.destroy();

      const fullBatches = batchMs.filter((_, i) => batches[i % batches.length]!.length === BATCH);
      return {
        accounts: ACCOUNTS,
        transactions_per_account: expectedTransactions.reduce((n, c) => n + c, 0),
        journal_entries_per_account: 5,
        seed_s: seedSeconds,
        batch_of_500: latencySummary(fullBatches),
        per_account_in_batch: latencySummary(accountMs),
        accounts_per_s: round((reads / batchMs.reduce((a, b) => a + b, 0)) * 1000, 0),
        single_get: latencySummary(singleMs),
        commands_per_account: perAccountCommands,
        cpu_ms_per_account: perAccountCpu,
      };
    } finally {
      await reader?.close();
      await e.close();
    }
  },
};
export default scenario;

const external = (i: number) => `RECON-${String(i).padStart(6, '0')}`;

type Results = {
  results: Array<{
    external_account_number: string;
    error?: unknown;
    ledgers?: Array<{ transactions: { count: number } }>;
    notes?: number;
    statements?: number;
    payment_instruction?: unknown;
  }>;
};

/** Every account answered, in order, with the figures the seed wrote. */
function check(body: Results, numbers: string[], transactions: number[]) {
  body.results.forEach((r, i) => {
    const counts = r.ledgers?.map((l) => l.transactions.count);
    if (
      r.external_account_number !== numbers[i] ||
      r.error ||
      JSON.stringify(counts) !== JSON.stringify(transactions) ||
      r.statements !== 3 ||
      r.notes !== 3 ||
      !r.payment_instruction
    )
      throw new Error(`unexpected result for ${numbers[i]}: ${JSON.stringify(r).slice(0, 400)}`);
  });
}

/**
 * Writes every account as the creation does (process marked imported, journal entry 0, notes), then imports
 * onto it through the post-import use cases. Returns the transaction count each ledger ends with.
 */
async function seed(e: Awaited<ReturnType<typeof creationEnv>>): Promise<number[]> {
  const context = await seedContext(e);
  const { storage, journal, locks, ctx } = context;
  const key = { import_supplier: SUPPLIER, external_account_number: 'TEMPLATE' };
  const statements = valid(
    validateStatementsImport(
      {
        ...key,
        statements: ['2021-01', '2021-02'].map((m) => ({
          bill_period_from_date: `${m}-01`,
          bill_period_to_date: `${m}-28`,
          statement_id: `HIST-${m}`,
          issued_date: `${m}-28`,
          number: `F-${m}`,
          gross_amount: 5120,
        })),
      },
      ctx,
    ),
  ).statements;
  const notes = valid(
    validateNotesImport(
      {
        ...key,
        notes: [
          { body: 'Llamada de bienvenida hecha.', created_at: '2025-06-01T09:15:00Z' },
          { document_paths: [{ document_path: 'letters/welcome.pdf' }], created_at: '2025-06-02T09:15:00Z' },
        ],
      },
      ctx,
    ),
  ).notes;

  const now = new Date();
  await pool(
    Array.from({ length: ACCOUNTS }, (_, i) => i),
    SEED_CONCURRENCY,
    async (i) => {
      const accountId = await seedAccount(context, i, external(i), now);
      await importStatements(journal, locks, accountId, statements, (p) => p, now);
      await importNotes(storage, locks, accountId, notes, (p) => p, now);
      await recordInstruction(
        storage,
        accountId,
        { vendor: 'SIMULATED', reference: `sim_ok_${i}`, type: 'CARD' },
        {},
      );
    },
  );
  const ledgers = context.account.ledgers ?? [];
  return ledgers.map(
    (l, i) =>
      (l.historical_statement_transactions?.length ?? 0) +
      (l.current_statement_transactions?.length ?? 0) +
      (i === 0 ? IMPORTED_TRANSACTIONS : 0),
  );
}

function valid<T>(result: { ok: true; data: T } | { ok: false; errors: unknown }): T {
  if (!result.ok) throw new Error(`bench input invalid: ${JSON.stringify(result.errors).slice(0, 300)}`);
  return result.data;
}
