import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadConfig, type Config } from '../src/config.js';
import { freePort, startFerretDb, startRedisServer } from '../test/support/processes.js';

export type BenchEnv = {
  mongoBaseUrl: string;
  /** The database server's process id when the bench started it (for its CPU time), else null. */
  dbPid: number | null;
  /** FerretDB's Prometheus metrics when the bench started it (commands counted), else null. */
  dbMetricsUrl: string | null;
  redisUrl: string;
  /** The redis-server's process id when the bench started it, else null. */
  redisPid: number | null;
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
  let dbMetricsUrl: string | null = null;
  let redisPid: number | null = null;
  if (!mongoBaseUrl) {
    const debugPort = await freePort();
    const ferret = await startFerretDb({ debugPort });
    mongoBaseUrl = ferret.url;
    dbPid = ferret.pid ?? null;
    dbMetricsUrl = `http://127.0.0.1:${debugPort}/debug/metrics`;
    stops.push(ferret.stop);
  }
  if (!redisUrl) {
    const redis = await startRedisServer();
    redisUrl = redis.url;
    redisPid = redis.pid ?? null;
    stops.push(redis.stop);
  }
  const base = mongoBaseUrl;
  const benchEnv: BenchEnv = {
    mongoBaseUrl: base,
    dbPid,
    dbMetricsUrl,
    redisUrl,
    redisPid,
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

/**
 * Commands per item between now and `perItem`: the database's (FerretDB's request counters, by command) and
 * Redis's (INFO commandstats, by command), each with its total. A figure is null where it cannot be read (a
 * server the bench did not start).
 */
export async function commandMeter(env: Pick<BenchEnv, 'dbMetricsUrl' | 'redisUrl'>) {
  const redis = new Redis(env.redisUrl, { maxRetriesPerRequest: 1 });
  const read = async () => ({
    database: await ferretCommands(env.dbMetricsUrl),
    redis: await redisCommands(redis),
  });
  const before = await read();
  return {
    async perItem(items: number) {
      const now = await read();
      redis.disconnect();
      const diff = (a: Record<string, number> | null, b: Record<string, number> | null) => {
        if (!a || !b) return null;
        const out: Record<string, number> = {};
        let total = 0;
        for (const [k, v] of Object.entries(b)) {
          const d = v - (a[k] ?? 0);
          if (d > 0) {
            out[k] = round(d / items, 2);
            total += d;
          }
        }
        return {
          total: round(total / items, 2),
          ...Object.fromEntries(Object.entries(out).sort((x, y) => y[1] - x[1])),
        };
      };
      return { database: diff(before.database, now.database), redis: diff(before.redis, now.redis) };
    },
  };
}

async function ferretCommands(url: string | null): Promise<Record<string, number> | null> {
  if (!url) return null;
  const text = await (await fetch(url)).text();
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^ferretdb_client_requests_total\{([^}]*)\} (\S+)$/gm)) {
    const command = /command="([^"]*)"/.exec(m[1]!)?.[1] ?? 'unknown';
    counts[command] = (counts[command] ?? 0) + Number(m[2]);
  }
  return counts;
}

async function redisCommands(redis: Redis): Promise<Record<string, number> | null> {
  try {
    const info = await redis.info('commandstats');
    const counts: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts[m[1]!] = Number(m[2]);
    return counts;
  } catch {
    return null;
  }
}
