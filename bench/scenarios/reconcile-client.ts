import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { creationEnv, pool, SUPPLIER } from '../creation-env.js';
import { IMPORTED_TRANSACTIONS, seedAccount, seedContext } from '../reconciliation-seed.js';
import { processCpuSeconds, round, type BenchEnv, type Scenario } from '../support.js';

/**
 * The cohort sizes reconciled, in one run (`BENCH_ACCOUNTS=20000,100000`): the largest is seeded once and each
 * size reads the first accounts of it, each through cohort and transactions files of its own.
 */
const SIZES = [...new Set((process.env.BENCH_ACCOUNTS ?? '2000').split(',').map(Number))].sort(
  (a, b) => a - b,
);
const LARGEST = SIZES.at(-1)!;
/** Smallest to largest, then the smaller ones again (20,000, 100,000, 20,000): a drift touches both sides. */
const ORDER = [...SIZES, ...SIZES.slice(0, -1).reverse()];
const SEED_CONCURRENCY = 16;
const root = resolve(import.meta.dirname, '../..');
/**
 * The client as a user runs it: its launcher, bin/import-client, on the build the bench has just made; from
 * source (BENCH_FROM_SOURCE=1) through tsx with the launcher's node flags (a stale build could be there).
 * BENCH_CLIENT_NODE_ARGS adds node flags (e.g. `--trace-gc`; the client's stdout is then shown).
 */
const extraNodeArgs = (process.env.BENCH_CLIENT_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Read when the client starts: bench/run.ts sets CHILD_FROM_BUILD after loading the scenarios. */
const client = () =>
  process.env.CHILD_FROM_BUILD === '1' && extraNodeArgs.length === 0
    ? [join(root, 'bin/import-client')]
    : [
        process.execPath,
        '--max-semi-space-size=16',
        ...extraNodeArgs,
        '--import',
        'tsx',
        'src/cli/client/cli.ts',
      ];

type Files = { cohort: string; transactions: string };
type Summary = {
  by_outcome: Record<string, number>;
  cpu_seconds: number;
  reconciliation: { read_back: Record<string, number>; money_difference: string };
};

/**
 * `import-client reconcile` on cohorts of realistic accounts with a transactions file, client and service on
 * this machine: the accounts are written as the creation writes them (the realistic payload's journal entry 0,
 * its notes, the process marked imported) and get 30 transactions each through the transaction import's use
 * case (the seed is not timed: creating them through the API runs at about 40–60 accounts/s here); a cohort
 * file holds every payload and its transactions file one request per account. Then the client runs as a user
 * runs it, against one web process, once per size in ORDER, and must find every account matched. Timed: the
 * client's wall time and peak RSS (VmHWM); CPU of the client (its summary), the web process and the database
 * over each run; the read-back's batch round trips (the client's summary). Linear time: the largest size's ms
 * per account over the smallest's (the mean of its runs), measured in the same run.
 */
const scenario: Scenario = {
  name: 'reconcile-client',
  description: `import-client reconcile of ${SIZES.join(' and ')} realistic accounts (about 230 transactions each) with a transactions file of ${IMPORTED_TRANSACTIONS} each, against a web process, batches of 500, runs ${ORDER.join(', ')}`,
  async run(env) {
    const config = env.config();
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    const dir = mkdtempSync(join(tmpdir(), 'bench-reconcile-'));
    let web: ReturnType<typeof startProcess> | null = null;
    try {
      const seedStart = performance.now();
      const files = await seed(e, dir);
      const seedSeconds = round((performance.now() - seedStart) / 1000, 1);
      console.log(`seeded ${LARGEST} accounts in ${seedSeconds} s`);

      const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
        .api_key;
      const port = await freePort();
      web = startProcess('web', { ...childEnv(config), PORT: String(port), HOST: '127.0.0.1' });
      await waitForPort(port);
      const runs: Record<string, unknown>[] = [];
      const perAccountMs = new Map<number, number[]>();
      const peakRss = new Map<number, number>();
      for (const [i, size] of ORDER.entries()) {
        const r = await reconcileOnce(
          { env, webPid: web.proc.pid, port, key },
          files.get(size)!,
          size,
          dir,
          i,
        );
        console.log(
          `reconciled ${size}: ${r.total_s} s, ${r.ms_per_account} ms an account, ${r.client_peak_rss_mb} MB`,
        );
        runs.push(r);
        perAccountMs.set(size, [...(perAccountMs.get(size) ?? []), r.ms_per_account]);
        peakRss.set(size, Math.max(peakRss.get(size) ?? 0, r.client_peak_rss_mb));
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const bySize = Object.fromEntries(
        SIZES.map((n) => [
          n,
          { ms_per_account: round(mean(perAccountMs.get(n)!), 2), client_peak_rss_mb: peakRss.get(n)! },
        ]),
      );
      return {
        sizes: SIZES,
        seeded_accounts: LARGEST,
        seed_s: seedSeconds,
        runs,
        by_size: bySize,
        ...(SIZES.length > 1
          ? {
              per_account_ratio_largest_to_smallest: round(
                mean(perAccountMs.get(LARGEST)!) / mean(perAccountMs.get(SIZES[0]!)!),
                2,
              ),
            }
          : {}),
        client_peak_rss_mb: Math.max(...peakRss.values()),
      };
    } finally {
      await web?.stop();
      await e.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default scenario;

/** One `import-client reconcile` of `size` accounts, as a user runs it; every account must be matched. */
async function reconcileOnce(
  ctx: { env: BenchEnv; webPid: number | undefined; port: number; key: string },
  files: Files,
  size: number,
  dir: string,
  index: number,
) {
  const report = join(dir, `report-${index}`);
  const webCpu = processCpuSeconds(ctx.webPid);
  const dbCpu = processCpuSeconds(ctx.env.dbPid);
  const started = performance.now();
  const rss = { peakMb: 0 };
  const code = await new Promise<number | null>((resolvePromise) => {
    const [command, ...args] = client();
    const proc = spawn(
      command!,
      [
        ...args,
        'reconcile',
        files.cohort,
        '--transactions',
        files.transactions,
        '--quiet',
        '--report',
        report,
      ],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          TMPDIR: dir,
          IMPORT_BASE_URL: `http://127.0.0.1:${ctx.port}`,
          IMPORT_API_KEY: ctx.key,
        },
        stdio: ['ignore', process.env.BENCH_CLIENT_NODE_ARGS ? 'inherit' : 'ignore', 'inherit'],
      },
    );
    const stopSampling = sampleRss(proc.pid!, rss);
    proc.on('exit', (c) => {
      stopSampling();
      resolvePromise(c);
    });
  });
  const seconds = (performance.now() - started) / 1000;
  const serviceCpu = (processCpuSeconds(ctx.webPid) ?? NaN) - (webCpu ?? NaN);
  const databaseCpu = dbCpu === null ? null : (processCpuSeconds(ctx.env.dbPid) ?? NaN) - dbCpu;
  const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as Summary;
  if (code !== 0 || summary.by_outcome.matched !== size)
    throw new Error(`reconcile of ${size} exited ${code}: ${JSON.stringify(summary.by_outcome)}`);
  rmSync(report, { recursive: true, force: true });
  return {
    accounts: size,
    total_s: round(seconds, 1),
    accounts_per_s: round(size / seconds, 0),
    ms_per_account: round((seconds / size) * 1000, 2),
    client_peak_rss_mb: round(rss.peakMb, 1),
    read_back: summary.reconciliation.read_back,
    cpu_s: {
      client: summary.cpu_seconds,
      service: round(serviceCpu, 2),
      database: databaseCpu === null ? null : round(databaseCpu, 2),
    },
  };
}

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
 * Writes the LARGEST accounts as the creation does and imports their transactions through the use case; for
 * each size, the cohort file and the transactions file of its first accounts (the same bodies the use case was
 * given), written as the seed goes (waiting on a full stream's drain).
 */
async function seed(e: Awaited<ReturnType<typeof creationEnv>>, dir: string): Promise<Map<number, Files>> {
  const context = await seedContext(e);
  const out = SIZES.map((size) => {
    const files = {
      cohort: join(dir, `cohort-${size}.jsonl`),
      transactions: join(dir, `transactions-${size}.jsonl`),
    };
    return {
      size,
      files,
      cohort: createWriteStream(files.cohort),
      transactions: createWriteStream(files.transactions),
    };
  });
  // One wait for a full stream's drain, however many writers wait on it.
  const drains = new Map<WriteStream, Promise<void>>();
  const write = async (stream: WriteStream, line: string) => {
    if (stream.write(line)) return;
    let drained = drains.get(stream);
    if (!drained) {
      drained = once(stream, 'drain').then(() => void drains.delete(stream));
      drains.set(stream, drained);
    }
    await drained;
  };
  const now = new Date();
  await pool(
    Array.from({ length: LARGEST }, (_, i) => i),
    SEED_CONCURRENCY,
    async (i) => {
      const ext = external(i);
      await seedAccount(context, i, ext, now);
      const cohortLine =
        JSON.stringify({ ...e.template, import_supplier: SUPPLIER, external_account_number: ext }) + '\n';
      const transactionsLine =
        JSON.stringify({
          import_supplier: SUPPLIER,
          external_account_number: ext,
          transactions: context.rawTransactions,
        }) + '\n';
      for (const o of out)
        if (i < o.size)
          await Promise.all([write(o.cohort, cohortLine), write(o.transactions, transactionsLine)]);
    },
  );
  await Promise.all(
    out.flatMap((o) => [o.cohort, o.transactions].map((s) => new Promise<void>((r) => s.end(() => r())))),
  );
  return new Map(out.map((o) => [o.size, o.files]));
}
