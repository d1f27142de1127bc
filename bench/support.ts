import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig, type Config } from '../src/config.js';
import { startFerretDb, startRedisServer } from '../test/support/processes.js';

export type BenchEnv = {
  mongoBaseUrl: string;
  /** The database server's process id when the bench started it (for its CPU time), else null. */
  dbPid: number | null;
  redisUrl: string;
  /** A fresh config with its own database and queue prefix. */
  config(overrides?: Record<string, string>): Config;
};

export type Scenario = {
  name: string;
  description: string;
  run(env: BenchEnv): Promise<Record<string, unknown>>;
};

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export function latencySummary(samplesMs: number[]) {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
    max_ms: round(sorted.at(-1) ?? NaN),
  };
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Services for a benchmark run: MONGO_URL / REDIS_URL when given, else local FerretDB and redis-server. */
export async function startBenchEnv(env: Record<string, string | undefined>) {
  const stops: Array<() => Promise<void>> = [];
  let mongoBaseUrl = env.MONGO_URL;
  let redisUrl = env.REDIS_URL;
  let dbPid: number | null = null;
  if (!mongoBaseUrl) {
    const ferret = await startFerretDb();
    mongoBaseUrl = ferret.url;
    dbPid = ferret.pid ?? null;
    stops.push(ferret.stop);
  }
  if (!redisUrl) {
    const redis = await startRedisServer();
    redisUrl = redis.url;
    stops.push(redis.stop);
  }
  const base = mongoBaseUrl;
  const benchEnv: BenchEnv = {
    mongoBaseUrl: base,
    dbPid,
    redisUrl,
    config: (overrides = {}) => benchConfig(base, redisUrl, overrides),
  };
  return {
    env: benchEnv,
    stop: async () => {
      for (const s of stops.reverse()) await s();
    },
  };
}

/** A fresh config with its own database (on the server at `mongoBaseUrl`) and queue prefix. */
export function benchConfig(mongoBaseUrl: string, redisUrl: string, overrides: Record<string, string> = {}) {
  const name = `bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(mongoBaseUrl);
  url.pathname = `/${name}`;
  return loadConfig({
    MONGO_URL: url.toString(),
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: name,
    JWT_SECRET: 'bench-jwt-secret-0123456789-abcdefghijklmnop',
    API_KEY_HASH_SECRET: 'bench-hash-secret-0123456789-abcdefghijklmnop',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
}

/**
 * CPU seconds (user + system) a process has used so far, from /proc (Linux); null where unreadable. Fields 14
 * and 15 of /proc/<pid>/stat, in clock ticks (100 per second on Linux), after the command name in parentheses.
 */
export function processCpuSeconds(pid: number | null | undefined): number | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** CPU milliseconds per item a set of processes used between `start()` and `stop()`. */
export function cpuMeter(pids: Record<string, number | null | undefined>) {
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, processCpuSeconds(pid)]));
  return {
    perItemMs(items: number): Record<string, number | null> {
      return Object.fromEntries(
        Object.entries(pids).map(([k, pid]) => {
          const now = processCpuSeconds(pid);
          const was = before[k];
          return [k, now === null || was == null ? null : round(((now - was) * 1000) / items, 2)];
        }),
      );
    },
  };
}
