import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { AccountTextOutcome } from './account-text.js';
import type { AccountTask, PoolData } from './types.js';

export type { AccountTextOutcome } from './account-text.js';
export type { AccountTask, PoolData } from './types.js';

export type ValidationPool = {
  readonly threads: number;
  /** Parses, validates and serialises one body on a thread. */
  validate(task: AccountTask): Promise<AccountTextOutcome>;
  /** Lets the tasks already given finish, then stops every thread. */
  close(): Promise<void>;
};

// Compiled (dist/), the task is plain JavaScript next to this file. From source (tsx in development and
// benchmarks, vitest in tests) it is TypeScript, which a worker thread imports through tsx's loader
// (a dev dependency, present wherever the source runs).
const fromSource = import.meta.url.endsWith('.ts');
const taskFile = new URL(fromSource ? './task.ts' : './task.js', import.meta.url).href;
const execArgv = fromSource
  ? ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href]
  : undefined;

// Every validation thread of this process that has not exited yet.
const live = new Set<Worker>();

/** Validation threads in this process that are still running (for tests and diagnostics). */
export function liveValidationThreads(): number {
  return live.size;
}

function track(pool: Piscina): void {
  for (const worker of pool.threads) {
    if (live.has(worker)) continue;
    live.add(worker);
    worker.once('exit', () => live.delete(worker));
  }
}

/**
 * A pool of up to `threads` worker threads validating account bodies: one starts with the pool (so a
 * broken build fails at start), more start while tasks wait, and those stop after a minute without work.
 */
export function createValidationPool(threads: number, data: PoolData): ValidationPool {
  const pool = new Piscina<AccountTask, AccountTextOutcome>({
    filename: taskFile,
    minThreads: 1,
    maxThreads: threads,
    idleTimeout: 60_000,
    // A task is one synchronous validation. A thread holds a few queued tasks in its port, so it starts
    // the next one at once, without waiting for the event loop to take its answer and hand it another.
    concurrentTasksPerWorker: 4,
    workerData: data,
    execArgv,
    recordTiming: false,
  });
  track(pool);
  pool.on('workerCreate', () => track(pool)); // a thread replacing one that died
  let closing: Promise<void> | null = null;
  return {
    threads,
    validate: (task) => pool.run(task),
    close() {
      closing ??= pool.close();
      return closing;
    },
  };
}
