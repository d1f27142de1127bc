import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { creationEnv, pool, SUPPLIER } from '../creation-env.js';
import { IMPORTED_TRANSACTIONS, seedAccount, seedContext } from '../reconciliation-seed.js';
import { processCpuSeconds, round, type Scenario } from '../support.js';

const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 2_000);
const SEED_CONCURRENCY = 16;
const root = resolve(import.meta.dirname, '../..');

/**
 * `import-client reconcile` on a cohort of realistic accounts with a transactions file, client and service on
 * this machine: the accounts are written as the creation writes them (the realistic payload's journal entry 0,
 * its notes, the process marked imported) and get 30 transactions each through the transaction import's use
 * case (the seed is not timed: creating them through the API runs at about 40–60 accounts/s here); the cohort
 * file holds every payload and the transactions file one request per account. Then the client runs as a user
 * runs it, against a web process of its own, and must find every account matched. Timed: the client's wall
 * time; CPU of the client (its summary), the web process and the database over the run; the read-back's batch
 * round trips (the client's summary).
 */
const scenario: Scenario = {
  name: 'reconcile-client',
  description: `import-client reconcile of ${ACCOUNTS} realistic accounts (about 230 transactions each) with a transactions file of ${IMPORTED_TRANSACTIONS} each, against a web process, batches of 500`,
  async run(env) {
    const config = env.config();
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    const dir = mkdtempSync(join(tmpdir(), 'bench-reconcile-'));
    let web: ReturnType<typeof startProcess> | null = null;
    try {
      const seedStart = performance.now();
      const { cohort, transactions } = await seed(e, dir);
      const seedSeconds = round((performance.now() - seedStart) / 1000, 1);

      const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
        .api_key;
      const port = await freePort();
      web = startProcess('web', { ...childEnv(config), PORT: String(port), HOST: '127.0.0.1' });
      await waitForPort(port);
      const report = join(dir, 'report');
      const webCpu = processCpuSeconds(web.proc.pid);
      const dbCpu = processCpuSeconds(env.dbPid);
      const started = performance.now();
      const rss = { peakMb: 0 };
      const code = await new Promise<number | null>((resolvePromise) => {
        const proc = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            'src/cli/client/cli.ts',
            'reconcile',
            cohort,
            '--transactions',
            transactions,
            '--quiet',
            '--report',
            report,
          ],
          {
            cwd: root,
            env: {
              PATH: process.env.PATH,
              HOME: process.env.HOME,
              IMPORT_BASE_URL: `http://127.0.0.1:${port}`,
              IMPORT_API_KEY: key,
            },
            stdio: ['ignore', 'ignore', 'inherit'],
          },
        );
        const stopSampling = sampleRss(proc.pid!, rss);
        proc.on('exit', (c) => {
          stopSampling();
          resolvePromise(c);
        });
      });
      const seconds = (performance.now() - started) / 1000;
      const serviceCpu = (processCpuSeconds(web.proc.pid) ?? NaN) - (webCpu ?? NaN);
      const databaseCpu = dbCpu === null ? null : (processCpuSeconds(env.dbPid) ?? NaN) - dbCpu;
      const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as {
        by_outcome: Record<string, number>;
        cpu_seconds: number;
        reconciliation: { read_back: Record<string, number>; money_difference: string };
      };
      if (code !== 0 || summary.by_outcome.matched !== ACCOUNTS)
        throw new Error(`reconcile exited ${code}: ${JSON.stringify(summary.by_outcome)}`);
      const perAccount = seconds / ACCOUNTS;
      return {
        accounts: ACCOUNTS,
        seed_s: seedSeconds,
        outcomes: summary.by_outcome,
        total_s: round(seconds, 1),
        accounts_per_s: round(ACCOUNTS / seconds, 0),
        ms_per_account: round(perAccount * 1000, 2),
        extrapolated_10000_s: round(perAccount * 10_000, 1),
        read_back: summary.reconciliation.read_back,
        client_peak_rss_mb: round(rss.peakMb, 1),
        cpu_s: {
          client: summary.cpu_seconds,
          service: round(serviceCpu, 2),
          database: databaseCpu === null ? null : round(databaseCpu, 2),
        },
      };
    } finally {
      await web?.stop();
      await e.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default scenario;

/** The peak resident memory of a process (VmHWM, read every 200 ms while it runs) into `into.peakMb`. */
function sampleRss(pid: number, into: { peakMb: number }): () => void {
  const timer = setInterval(() => {
    try {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      into.peakMb = Math.max(into.peakMb, kb / 1024);
    } catch {
      // silent-ok: the process has exited; its last sample stands.
    }
  }, 200);
  return () => clearInterval(timer);
}

const external = (i: number) => `RC-${String(i).padStart(6, '0')}`;

/**
 * Writes every account as the creation does and imports its transactions through the use case; writes the
 * cohort file and the transactions file the client reads (the same bodies the use case was given).
 */
async function seed(e: Awaited<ReturnType<typeof creationEnv>>, dir: string) {
  const context = await seedContext(e);
  const cohort = join(dir, 'cohort.jsonl');
  const transactions = join(dir, 'transactions.jsonl');
  const cohortOut = createWriteStream(cohort);
  const transactionsOut = createWriteStream(transactions);
  const now = new Date();
  await pool(
    Array.from({ length: ACCOUNTS }, (_, i) => i),
    SEED_CONCURRENCY,
    async (i) => {
      const ext = external(i);
      await seedAccount(context, i, ext, now);
      cohortOut.write(
        JSON.stringify({ ...e.template, import_supplier: SUPPLIER, external_account_number: ext }) + '\n',
      );
      transactionsOut.write(
        JSON.stringify({
          import_supplier: SUPPLIER,
          external_account_number: ext,
          transactions: context.rawTransactions,
        }) + '\n',
      );
    },
  );
  await Promise.all([
    new Promise<void>((r) => cohortOut.end(() => r())),
    new Promise<void>((r) => transactionsOut.end(() => r())),
  ]);
  return { cohort, transactions };
}
