import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { creationEnv, httpCreationClient, pool } from '../creation-env.js';
import { cpuMeter, round, type BenchEnv, type Scenario } from '../support.js';
import { startWebAndWorker } from '../web-worker.js';

/** Realistic accounts per run: `BENCH_TRACING_ACCOUNTS` (default 1,000). */
const ACCOUNTS = Number(process.env.BENCH_TRACING_ACCOUNTS ?? 1_000);
/** Runs of each setting, alternating (on, off, on, off, …): `BENCH_TRACING_ROUNDS` (default 3). */
const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 3);
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
const WARM_UP = 100;
/** on: every trace kept; sampled: one in ten (parentbased_traceidratio 0.1), as docs/tracing.md suggests. */
const MODES = ['on', 'sampled', 'off'] as const;
type Mode = (typeof MODES)[number];

/**
 * What tracing costs the service: v1 stage + create of realistic accounts over HTTP, one web and one worker
 * process of their own each run, with tracing on (every trace kept, exported in OTLP protobuf to a receiver on
 * this machine), sampled (one trace in ten kept) and off, alternating. The figure is the service's CPU per account (web, worker, database
 * and Redis, as the fair-share scenario measures it). Goal: on at most 1.05× off (means of the runs).
 */
const scenario: Scenario = {
  name: 'tracing',
  description:
    `Tracing on (OTLP protobuf to a local receiver, every trace kept), sampled (one in ten) and off, alternating, ${ROUNDS} runs ` +
    `each of ${ACCOUNTS} realistic accounts: v1 stage + create over HTTP at ${LIMIT} in flight; service CPU ` +
    `per account and the ratio on/off`,
  async run(env) {
    const receiver = await startReceiver();
    const runs: {
      mode: Mode;
      accounts_per_s: number;
      service_cpu_ms: number;
      cpu_ms: Record<string, number | null>;
      spans_kb_per_account: number;
    }[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++)
        for (const mode of MODES) {
          runs.push({ mode, ...(await runV1(env, mode, receiver)) });
          console.log(`  ${mode}: ${JSON.stringify(runs.at(-1))}`);
        }
    } finally {
      await receiver.close();
    }
    const mean = (
      mode: Mode,
      key: 'accounts_per_s' | 'service_cpu_ms' | 'spans_kb_per_account' | 'web' | 'worker',
    ) => {
      const of = runs
        .filter((r) => r.mode === mode)
        .map((r) => (key === 'web' || key === 'worker' ? (r.cpu_ms[key] ?? 0) : r[key]));
      return round(of.reduce((a, b) => a + b, 0) / of.length, 2);
    };
    return {
      accounts_per_run: ACCOUNTS,
      creation_limit: LIMIT,
      runs,
      on_service_cpu_ms: mean('on', 'service_cpu_ms'),
      off_service_cpu_ms: mean('off', 'service_cpu_ms'),
      cpu_ratio_on_off: round(mean('on', 'service_cpu_ms') / mean('off', 'service_cpu_ms'), 3),
      sampled_service_cpu_ms: mean('sampled', 'service_cpu_ms'),
      cpu_ratio_sampled_off: round(mean('sampled', 'service_cpu_ms') / mean('off', 'service_cpu_ms'), 3),
      // Web and worker alone: where tracing runs (the database's and Redis's CPU only add noise).
      cpu_ratio_on_off_web_worker: round(
        (mean('on', 'web') + mean('on', 'worker')) / (mean('off', 'web') + mean('off', 'worker')),
        3,
      ),
      on_accounts_per_s: mean('on', 'accounts_per_s'),
      off_accounts_per_s: mean('off', 'accounts_per_s'),
      exported_kb_per_account: mean('on', 'spans_kb_per_account'),
      // Where the difference lands: tracing runs in the web and the worker.
      ...Object.fromEntries(
        ['web', 'worker', 'database', 'redis'].flatMap((k) =>
          MODES.map((mode) => {
            const of = runs.filter((r) => r.mode === mode).map((r) => r.cpu_ms[k] ?? 0);
            return [`${mode}_${k}_cpu_ms`, round(of.reduce((a, b) => a + b, 0) / of.length, 2)];
          }),
        ),
      ),
      goal: 'cpu_ratio_on_off <= 1.05 (the service CPU per account of web, worker, database and Redis)',
    };
  },
};
export default scenario;

/** An OTLP/HTTP endpoint that takes every export and counts its bytes (what a collector's receiver does first). */
async function startReceiver() {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function runV1(env: BenchEnv, mode: Mode, receiver: Awaited<ReturnType<typeof startReceiver>>) {
  const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
  const e = await creationEnv(config, { workers: false, payload: 'realistic' });
  const tracing: Record<string, string> = (
    {
      on: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint },
      sampled: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      },
      off: {},
    } as Record<Mode, Record<string, string>>
  )[mode];
  const { port, web, worker, stop } = await startWebAndWorker(config, tracing);
  const client = httpCreationClient({
    ports: [port],
    headers: e.headers,
    template: e.template,
    inFlight: LIMIT,
  });
  try {
    await pool(
      Array.from({ length: WARM_UP }, (_, i) => `TW-${i}`),
      LIMIT,
      (ext) => client.stageAndCreate(ext),
    );
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `TR-${String(i).padStart(6, '0')}`);
    const meter = cpuMeter({
      web: web.proc.pid,
      worker: worker.proc.pid,
      database: env.dbPid,
      redis: env.redisPid,
    });
    const bytesBefore = receiver.bytes();
    const started = performance.now();
    await pool(externals, LIMIT, (ext) => client.stageAndCreate(ext));
    const seconds = (performance.now() - started) / 1000;
    const cpuMs = meter.perItemMs(ACCOUNTS);
    const serviceCpuMs = Object.values(cpuMs).reduce<number>((s, ms) => s + (ms ?? 0), 0);
    const imported = await e.app.db.models.AccountImportProcess.countDocuments({
      krakenAccountNumber: { $ne: null },
    });
    if (imported !== ACCOUNTS + WARM_UP) throw new Error(`expected ${ACCOUNTS} accounts, found ${imported}`);
    return {
      accounts_per_s: round(ACCOUNTS / seconds, 1),
      service_cpu_ms: round(serviceCpuMs, 2),
      cpu_ms: cpuMs,
      // Spans still in a batch when the run ends are counted in the next run's: a rough figure.
      spans_kb_per_account: round((receiver.bytes() - bytesBefore) / 1024 / ACCOUNTS, 2),
    };
  } finally {
    client.close();
    await stop();
    await e.close();
  }
}
