import { Redis } from 'ioredis';
import { creationEnv, httpCreationClient, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { startServiceProcesses } from '../scheduled-env.js';
import { cpuMeter, round, type BenchEnv, type Scenario } from '../support.js';
import { startWebAndWorker } from '../web-worker.js';

/** Realistic accounts per run: `BENCH_FAIR_ACCOUNTS` (default 1,000). */
const ACCOUNTS = Number(process.env.BENCH_FAIR_ACCOUNTS ?? 1_000);
/** Runs of each setting, alternating (on, off, on, off, …): `BENCH_FAIR_ROUNDS` (default 2). */
const ROUNDS = Number(process.env.BENCH_FAIR_ROUNDS ?? 2);
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
const WARM_UP = 100;
const MODES = ['on', 'off'] as const;
type Mode = (typeof MODES)[number];

/**
 * What the fair share costs an organisation alone on the service (the usual case: one supplier migrating):
 * the same lone organisation with `ACCOUNT_CREATION_FAIR_SHARE` on and off, alternating, one web and one worker
 * process of their own each run. v1: stage + create over HTTP at the limit in flight; v2: the same number of
 * accounts scheduled (window: now) as fast as the client sends them, timed to the last PROCESSED. Goal: with
 * the shares on, at least 0.95 of the throughput with them off (means of the runs, in one run of the bench).
 */
const scenario: Scenario = {
  name: 'fair-share',
  description:
    `A lone organisation with the fair share on vs off (ACCOUNT_CREATION_FAIR_SHARE), alternating, ${ROUNDS} ` +
    `runs each of ${ACCOUNTS} realistic accounts: v1 stage + create at ${LIMIT} in flight, and v2 scheduled; ` +
    `accounts/s and the ratio on/off`,
  async run(env) {
    const runs: {
      path: 'v1' | 'v2';
      mode: Mode;
      accounts_per_s: number;
      refused_429: number;
      service_cpu_ms: number;
      redis_us: RedisTime;
    }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of MODES) {
        runs.push({ path: 'v1', mode, ...(await runV1(env, mode)) });
        console.log(`  v1 ${mode}: ${JSON.stringify(runs.at(-1))}`);
        runs.push({ path: 'v2', mode, ...(await runV2(env, mode)) });
        console.log(`  v2 ${mode}: ${JSON.stringify(runs.at(-1))}`);
      }
    }
    const mean = (path: 'v1' | 'v2', mode: Mode, key: 'accounts_per_s' | 'service_cpu_ms') => {
      const of = runs.filter((r) => r.path === path && r.mode === mode).map((r) => r[key]);
      return round(of.reduce((a, b) => a + b, 0) / of.length, 2);
    };
    const redisMean = (path: 'v1' | 'v2', mode: Mode, key: keyof RedisTime) => {
      const of = runs.filter((r) => r.path === path && r.mode === mode).map((r) => r.redis_us[key]);
      return round(of.reduce((a, b) => a + b, 0) / of.length, 1);
    };
    const summary = (path: 'v1' | 'v2') => ({
      on_accounts_per_s: mean(path, 'on', 'accounts_per_s'),
      off_accounts_per_s: mean(path, 'off', 'accounts_per_s'),
      ratio_on_off: round(mean(path, 'on', 'accounts_per_s') / mean(path, 'off', 'accounts_per_s'), 3),
      // Less sensitive than wall time to what else the machine runs meanwhile.
      on_service_cpu_ms: mean(path, 'on', 'service_cpu_ms'),
      off_service_cpu_ms: mean(path, 'off', 'service_cpu_ms'),
      cpu_ratio_off_on: round(mean(path, 'off', 'service_cpu_ms') / mean(path, 'on', 'service_cpu_ms'), 3),
      // Exact, whatever else the machine runs: Redis's own time in its commands (INFO commandstats), where
      // on and off differ (the slot script's share arithmetic).
      on_redis_scripts_us: redisMean(path, 'on', 'scripts'),
      off_redis_scripts_us: redisMean(path, 'off', 'scripts'),
      on_redis_all_us: redisMean(path, 'on', 'all'),
      off_redis_all_us: redisMean(path, 'off', 'all'),
      // What the shares' extra Redis time is of the service's CPU per account (on).
      share_cost_of_service_cpu: round(
        (redisMean(path, 'on', 'all') - redisMean(path, 'off', 'all')) /
          1000 /
          mean(path, 'on', 'service_cpu_ms'),
        4,
      ),
    });
    return {
      accounts_per_run: ACCOUNTS,
      creation_limit: LIMIT,
      runs,
      v1: summary('v1'),
      v2: summary('v2'),
      goal: 'ratio_on_off >= 0.95 (and cpu_ratio_off_on >= 0.95: the service CPU per account of web, worker, database and Redis)',
    };
  },
};
export default scenario;

function configFor(env: BenchEnv, mode: Mode) {
  return env.config({
    ACCOUNT_CREATION_CONCURRENCY: String(LIMIT),
    ACCOUNT_CREATION_FAIR_SHARE: mode === 'on' ? 'true' : 'false',
    WEBHOOK_ALLOW_PRIVATE: 'true',
  });
}

async function runV1(env: BenchEnv, mode: Mode) {
  const config = configFor(env, mode);
  const e = await creationEnv(config, { workers: false, payload: 'realistic' });
  const { port, web, worker, stop } = await startWebAndWorker(config);
  const client = httpCreationClient({
    ports: [port],
    headers: e.headers,
    template: e.template,
    inFlight: LIMIT,
  });
  try {
    await pool(
      Array.from({ length: WARM_UP }, (_, i) => `FW-${i}`),
      LIMIT,
      (ext) => client.stageAndCreate(ext),
    );
    client.retried429 = 0;
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `FS-${String(i).padStart(6, '0')}`);
    const cpu = serviceCpu(env, web.proc.pid, worker.proc.pid);
    const redisTime = await redisMeter(env.redisUrl);
    const started = performance.now();
    await pool(externals, LIMIT, (ext) => client.stageAndCreate(ext));
    const seconds = (performance.now() - started) / 1000;
    const serviceCpuMs = cpu();
    const redis_us = await redisTime();
    const imported = await e.app.db.models.AccountImportProcess.countDocuments({
      krakenAccountNumber: { $ne: null },
    });
    if (imported !== ACCOUNTS + WARM_UP) throw new Error(`expected ${ACCOUNTS} accounts, found ${imported}`);
    return {
      accounts_per_s: round(ACCOUNTS / seconds, 1),
      refused_429: client.retried429,
      service_cpu_ms: serviceCpuMs,
      redis_us,
    };
  } finally {
    client.close();
    await stop();
    await e.close();
  }
}

async function runV2(env: BenchEnv, mode: Mode) {
  const config = configFor(env, mode);
  const e = await creationEnv(config, { workers: false, payload: 'realistic' });
  const service = await startServiceProcesses(config, LIMIT);
  try {
    const schedule = async (external: string) => {
      const status = await service.schedule(
        e.headers,
        { ...e.template, import_supplier: SUPPLIER, external_account_number: external },
        TEAM,
      );
      if (status !== 201) throw new Error(`schedule ${external}: ${status}`);
    };
    // Watched on the cohort's progress counts (Redis), as the scheduled scenario does.
    const counters = e.app.storage.progress!;
    const waitFor = async (n: number) => {
      const deadline = Date.now() + 30 * 60_000;
      while (((await counters.counts(SUPPLIER)).PROCESSED ?? 0) < n) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} accounts`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await pool(
      Array.from({ length: WARM_UP }, (_, i) => `FW-${i}`),
      LIMIT,
      schedule,
    );
    await waitFor(WARM_UP);
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `FS-${String(i).padStart(6, '0')}`);
    const cpu = serviceCpu(env, service.pids.web, service.pids.worker);
    const redisTime = await redisMeter(env.redisUrl);
    const started = performance.now();
    await pool(externals, LIMIT, schedule);
    await waitFor(WARM_UP + ACCOUNTS);
    const seconds = (performance.now() - started) / 1000;
    const service_cpu_ms = cpu();
    const redis_us = await redisTime();
    return { accounts_per_s: round(ACCOUNTS / seconds, 1), refused_429: 0, service_cpu_ms, redis_us };
  } finally {
    await service.stop();
    await e.close();
  }
}

/** From now, the CPU per account (ms) of the service: web, worker, database and Redis together. */
function serviceCpu(env: BenchEnv, web: number | undefined, worker: number | undefined) {
  const meter = cpuMeter({ web, worker, database: env.dbPid, redis: env.redisPid });
  return () =>
    round(
      Object.values(meter.perItemMs(ACCOUNTS)).reduce<number>((sum, ms) => sum + (ms ?? 0), 0),
      2,
    );
}

type RedisTime = { scripts: number; all: number };

/**
 * From now, Redis's own time per account (µs, INFO commandstats' usec): in its scripts (EVALSHA, EVAL, FCALL)
 * and in every command. The bench's Redis serves only this run.
 */
async function redisMeter(url: string): Promise<() => Promise<RedisTime>> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const read = async () => {
    const info = await redis.info('commandstats');
    let scripts = 0;
    let all = 0;
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
      const usec = Number(m[2]);
      all += usec;
      if (/^(evalsha|eval|fcall)$/.test(m[1]!)) scripts += usec;
    }
    return { scripts, all };
  };
  const before = await read();
  return async () => {
    const now = await read();
    redis.disconnect();
    return {
      scripts: round((now.scripts - before.scripts) / ACCOUNTS, 1),
      all: round((now.all - before.all) / ACCOUNTS, 1),
    };
  };
}
