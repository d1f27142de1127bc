import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../src/config.js';
import { startFerretDb, startRedisServer } from '../test/support/processes.js';

export type BenchEnv = {
  mongoBaseUrl: string;
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
  if (!mongoBaseUrl) {
    const ferret = await startFerretDb();
    mongoBaseUrl = ferret.url;
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
    redisUrl,
    config(overrides = {}) {
      const name = `bench_${randomBytes(4).toString('hex')}`;
      const url = new URL(base);
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
    },
  };
  return {
    env: benchEnv,
    stop: async () => {
      for (const s of stops.reverse()) await s();
    },
  };
}
