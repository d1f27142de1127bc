import { freePort, waitForPort } from '../../test/support/processes.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import {
  creationEnv,
  documentCount,
  httpCreationClient,
  PAYLOAD_KINDS,
  pool,
  type PayloadKind,
} from '../creation-env.js';
import { cpuMeter, commandMeter, latencySummary, round, type BenchEnv, type Scenario } from '../support.js';

const list = (value: string) =>
  value
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => Number(s.trim()));
/** Realistic-account counts to run, each in a fresh database: `BENCH_ACCOUNTS=1000,10000` (the default). */
const SIZES = list(process.env.BENCH_ACCOUNTS ?? '1000,10000');
/** Minimal-account count run beside them, for comparison. */
const MINIMAL_SIZES = list(process.env.BENCH_MINIMAL_ACCOUNTS ?? '1000');
/** The history sweep: months of history, and accounts per point. */
const SWEEP_MONTHS = list(process.env.BENCH_SWEEP_MONTHS ?? '12,42,120');
const SWEEP_ACCOUNTS = Number(process.env.BENCH_SWEEP_ACCOUNTS ?? 500);
const WARM_UP = 100;
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
const WORKER_CONCURRENCY = process.env.BENCH_WORKER_CONCURRENCY ?? '50';

/**
 * (b) End-to-end throughput over real HTTP: one `web` and one `worker` process (the service's own entry
 * points), a client keeping as many accounts in flight as the concurrency limit allows, each account staged
 * then created. A 429 (should not happen at exactly the limit) is retried after a short pause and counted.
 */
const scenario: Scenario = {
  name: 'creation-throughput',
  description:
    `Stage + create throughput via HTTP (1 web + 1 worker process, ${LIMIT} in flight = the limit): realistic accounts ` +
    `(42 months, 2 ledgers, ~200 transactions) at ${SIZES.join(', ')}, minimal accounts at ${MINIMAL_SIZES.join(', ')}, ` +
    `and a sweep over ${SWEEP_MONTHS.join(', ')} months of history at ${SWEEP_ACCOUNTS} accounts; CPU per account of ` +
    `each process (from /proc) and database documents written per account`,
  async run(env) {
    const results: Record<string, unknown> = {
      in_flight: LIMIT,
      worker_concurrency: Number(WORKER_CONCURRENCY),
    };
    for (const kind of PAYLOAD_KINDS) {
      for (const size of kind === 'realistic' ? SIZES : MINIMAL_SIZES)
        results[`${kind}_${size}`] = await runOnce(env, kind, size, 42);
    }
    if (PAYLOAD_KINDS.includes('realistic') && SWEEP_MONTHS.length > 0) {
      const sweep: Record<string, unknown> = {};
      for (const months of SWEEP_MONTHS) {
        const r = await runOnce(env, 'realistic', SWEEP_ACCOUNTS, months);
        sweep[`months_${months}`] = {
          transactions_per_account: r.transactions_per_account,
          payload_kb: r.payload_kb,
          accounts_per_s: r.accounts_per_s,
          documents_per_account: r.documents_per_account,
          cpu_ms_per_account: r.cpu_ms_per_account,
        };
      }
      results.history_sweep = sweep;
    }
    return results;
  },
};
export default scenario;

async function runOnce(env: BenchEnv, kind: PayloadKind, size: number, months: number) {
  const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
  const e = await creationEnv(config, { workers: false, payload: kind, months });
  const port = await freePort();
  // BENCH_CHILD_NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the web and worker processes.
  const base = childEnv(
    config,
    process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {},
  );
  const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
  const worker = startProcess('worker', { ...base, WORKER_CONCURRENCY });
  const client = httpCreationClient({
    ports: [port],
    headers: e.headers,
    template: e.template,
    inFlight: LIMIT,
  });
  try {
    await waitForPort(port);
    const template = e.template;
    const txCount = (template.ledgers ?? []).reduce(
      (n, l) => n + l.historical_statement_transactions.length + l.current_statement_transactions.length,
      0,
    );
    // Warm-up, not measured: module loading, JIT, connection pools (minutes of a real migration amortise them).
    const warm = Array.from({ length: WARM_UP }, (_, i) => `WARM-${i}`);
    await pool(warm, LIMIT, (ext) => client.stageAndCreate(ext));
    client.retried429 = 0;
    client.retried503 = 0;
    client.followed = 0;
    const documentsBefore = await documentCount(e.app.db.conn);
    const cpu = cpuMeter({
      database: env.dbPid,
      web: web.proc.pid,
      worker: worker.proc.pid,
      redis: env.redisPid,
    });
    const commands = await commandMeter(env);
    const clientCpu = process.cpuUsage();
    const externals = Array.from({ length: size }, (_, i) => `TP-${String(i).padStart(6, '0')}`);
    const stageMs: number[] = [];
    const createMs: number[] = [];
    const started = performance.now();
    let done = 0;
    let lastReport = started;
    await pool(externals, LIMIT, async (ext) => {
      await client.stageAndCreate(ext, stageMs, createMs);
      done++;
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        console.log(`  ${done}/${size} after ${round((lastReport - started) / 1000, 1)} s`);
      }
    });
    const seconds = (performance.now() - started) / 1000;
    const loadCpu = process.cpuUsage(clientCpu);
    const commandsPerAccount = await commands.perItem(size);
    const cpuPerAccount = {
      ...cpu.perItemMs(size),
      client: round((loadCpu.user + loadCpu.system) / 1000 / size, 2),
    };
    const imported = await e.app.db.models.AccountImportProcess.countDocuments({
      krakenAccountNumber: { $ne: null },
    });
    if (imported !== size + WARM_UP) throw new Error(`expected ${size} imported accounts, found ${imported}`);
    return {
      payload: kind,
      months,
      transactions_per_account: txCount,
      payload_kb: round(Buffer.byteLength(JSON.stringify(template)) / 1024, 1),
      accounts: size,
      documents_per_account: round(((await documentCount(e.app.db.conn)) - documentsBefore) / size, 2),
      cpu_ms_per_account: cpuPerAccount,
      /** Database commands (FerretDB's counters) and Redis commands (INFO commandstats) per account. */
      commands_per_account: commandsPerAccount,
      seconds: round(seconds, 1),
      accounts_per_s: round(size / seconds, 1),
      stage: latencySummary(stageMs),
      create: latencySummary(createMs),
      retried_429: client.retried429,
      retried_503: client.retried503,
      followed_after_503: client.followed,
    };
  } finally {
    client.close();
    await Promise.all([web.stop(), worker.stop()]);
    await e.close();
  }
}
