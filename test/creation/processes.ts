import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { Config } from '../../src/config.js';

const root = resolve(import.meta.dirname, '../..');

/** The environment that makes a child process use the same services, database and queue prefix as `config`. */
export function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MONGO_URL: config.MONGO_URL,
    MONGO_MAX_POOL_SIZE: String(config.MONGO_MAX_POOL_SIZE),
    REDIS_URL: config.REDIS_URL,
    REDIS_CLUSTER_NODES: config.REDIS_CLUSTER_NODES.map(({ host, port }) => `${host}:${port}`).join(','),
    QUEUE_PREFIX: config.QUEUE_PREFIX,
    JWT_SECRET: config.JWT_SECRET,
    API_KEY_HASH_SECRET: config.API_KEY_HASH_SECRET,
    OPERATOR_PASSWORD: config.OPERATOR_PASSWORD,
    LOG_LEVEL: process.env.CHILD_LOGS ?? 'silent',
    ACCOUNT_CREATION_CONCURRENCY: String(config.ACCOUNT_CREATION_CONCURRENCY),
    ACCOUNT_CREATION_SLOT_LEASE_MS: String(config.ACCOUNT_CREATION_SLOT_LEASE_MS),
    ACCOUNT_CREATION_FAIR_SHARE: String(config.ACCOUNT_CREATION_FAIR_SHARE),
    // The same vendors as the API under test (the tests enable SIMULATED).
    PAYMENT_VENDORS: config.PAYMENT_VENDORS.join(','),
    // The same activation delay as the test's own `webhook add` (writers remember endpoints for half of it).
    WEBHOOK_ACTIVATION_DELAY_MS: String(config.WEBHOOK_ACTIVATION_DELAY_MS),
    // Profiling a benchmark's processes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
    ...(process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {}),
    ...extra,
  };
}

export type Child = {
  proc: ChildProcess;
  exited: Promise<void>;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

/**
 * Runs one of the service's own process entry points (`web` or `worker`) as a separate OS process: from the
 * sources through tsx, or with CHILD_FROM_BUILD=1 from `dist/` as the Procfile runs them (the benchmarks, which
 * build first).
 */
export function startProcess(kind: 'web' | 'worker', env: NodeJS.ProcessEnv): Child {
  const fromBuild = process.env.CHILD_FROM_BUILD === '1';
  const entry = fromBuild
    ? kind === 'web'
      ? 'dist/api/server.js'
      : 'dist/workers/index.js'
    : kind === 'web'
      ? 'src/api/server.ts'
      : 'src/workers/index.ts';
  const proc = spawn(process.execPath, fromBuild ? [entry] : ['--import', 'tsx', entry], {
    cwd: root,
    env,
    stdio: ['ignore', process.env.CHILD_LOGS ? 'inherit' : 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    proc,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill(signal);
        await exited;
      }
    },
  };
}

/**
 * Starts worker processes one after another and SIGKILLs each at a random moment (up to `windowMs`) after it
 * took a job, `kills` times or until `done()`. `started()` counts the jobs taken so far (e.g. the sum of the
 * jobs' `attemptsStarted`), so a kill always lands while a worker works. `afterKill` runs after each kill.
 * Returns the number of kills.
 */
export async function killWorkersWhileTheyWork(options: {
  kills: number;
  env: NodeJS.ProcessEnv;
  windowMs: number;
  children: Child[];
  started: () => Promise<number>;
  done: () => Promise<boolean> | boolean;
  afterKill?: () => Promise<void>;
}): Promise<number> {
  let kills = 0;
  while (kills < options.kills) {
    const before = await options.started();
    const child = startProcess('worker', options.env);
    options.children.push(child);
    // Generous: a worker process boots (tsx compiles its sources) before it takes a job, and on a loaded 2-core
    // machine that alone has taken more than 30 s.
    const deadline = Date.now() + 180_000;
    for (;;) {
      if ((await options.started()) > before || (await options.done())) break;
      if (Date.now() > deadline)
        throw new Error('timed out (180 s) waiting for the new worker process to take a job');
      await new Promise((r) => setTimeout(r, 25));
    }
    if (await options.done()) break;
    // A random moment after the job turned active: anywhere from before the first write to after the last.
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * options.windowMs)));
    await child.stop('SIGKILL');
    kills++;
    await options.afterKill?.();
  }
  return kills;
}
