import { statSync } from 'node:fs';
import { type Command, InvalidArgumentError } from 'commander';
import { loadClientConfig } from '../../../config.js';
import { AdaptiveConcurrency, FixedConcurrency, type Concurrency } from '../concurrency.js';
import { ApiClient, UsageError } from '../http.js';
import { DRAIN_MS, RunStop, stopExitCodes } from '../stop.js';

// What every command of `import-client` shares: the run's stop (signals), the API clients it opened, option
// parsers, the check of its input files, and the help's environment and exit codes.

/** The stop of this process's run: Ctrl-C, SIGTERM, or the key refused mid-run. */
export const run = new RunStop();

/** SIGINT and SIGTERM stop the run (no new line, the lines in flight drain); a second signal quits at once. */
export function onSignals(): void {
  let signalled = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => {
      if (signalled) process.exit(stopExitCodes[signal]);
      signalled = true;
      process.stderr.write(
        `\n[import-client] ${signal}: stopping; no new lines; lines in flight may finish for ${DRAIN_MS / 1000} s, then are reported interrupted (a second signal quits now)\n`,
      );
      run.stop(signal);
    });
}

const clients: ApiClient[] = [];

/** A client of the service named by the environment (a usage error without IMPORT_API_KEY). */
export function api(options: { throttleTimeoutMs?: number; concurrency?: Concurrency } = {}): ApiClient {
  const { IMPORT_BASE_URL: base, IMPORT_API_KEY: key } = loadClientConfig();
  if (!key) throw new UsageError('set IMPORT_API_KEY (the organisation API key) in the environment');
  const { concurrency, throttleTimeoutMs } = options;
  const client = new ApiClient(base, key, {
    throttleTimeoutMs,
    cancelled: run.cancelled,
    observe: concurrency
      ? (status, ms, wait, kind, resent) => concurrency.observe(status, ms, wait, kind, resent)
      : undefined,
  });
  clients.push(client);
  return client;
}

/** Kept-alive connections would keep the process waiting after the work is done. */
export async function closeClients(): Promise<void> {
  await Promise.all(clients.map((c) => c.close()));
}

/** `--concurrency` and the like: a positive integer written as one (a usage error otherwise). */
export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a positive integer.');
  return n;
}

/** The default ceiling of the adaptive concurrency (`--concurrency`). */
export const DEFAULT_CEILING = 64;

/** Adds `--concurrency N` (the ceiling) and `--no-adaptive` (N fixed) to a command sending line by line. */
export function concurrencyOptions(command: Command): Command {
  return command
    .option(
      '--concurrency <n>',
      `lines in flight at most (the client finds the service's pace below it)`,
      positiveInteger,
      DEFAULT_CEILING,
    )
    .option('--no-adaptive', 'keep exactly --concurrency lines in flight');
}

/** The concurrency the options ask for. */
export function concurrencyOf(o: { concurrency: number; adaptive: boolean }): Concurrency {
  return o.adaptive ? new AdaptiveConcurrency(o.concurrency) : new FixedConcurrency(o.concurrency);
}

/** An input file that can be read (or `-`): a directory or a missing or unreadable file is a usage error. */
export function checkInput(file: string): void {
  if (file === '-') return;
  let stat;
  try {
    stat = statSync(file);
  } catch {
    throw new UsageError(`cannot read ${file}: no such file`);
  }
  if (stat.isDirectory()) throw new UsageError(`cannot read ${file}: it is a directory`);
  if (!stat.isFile() && !stat.isFIFO()) throw new UsageError(`cannot read ${file}: not a file`);
}

/**
 * The end of a command's help: the environment it reads and its exit codes (`success` and `failure`: what 0
 * and 1 mean for it; `key`: whether a key refused mid-run can stop it; `signals`: whether it drains on one;
 * `window`: whether the end of the cohort plan's window can stop it).
 */
export function helpAfter(
  command: Command,
  codes: {
    success: string;
    failure: string;
    key?: boolean;
    signals?: boolean;
    server?: boolean;
    window?: boolean;
  },
): Command {
  const env =
    codes.server === false
      ? ['  none: it calls no service']
      : [
          '  IMPORT_BASE_URL  the service (default http://127.0.0.1:3000)',
          '  IMPORT_API_KEY   the organisation API key (never a flag)',
        ];
  const usage =
    codes.server === false ? 'unreadable input' : 'missing IMPORT_API_KEY or a refused key, unreadable input';
  const exits = [
    `  0    ${codes.success}`,
    `  1    ${codes.failure}`,
    `  2    usage: unknown command or option, bad value, ${usage} (one line on stderr)`,
    ...(codes.key
      ? ['  3    the service refused the API key during the run (revoked): the run stopped']
      : []),
    ...(codes.window
      ? [
          "  4    the window of the supplier's cohort plan ended: the accounts that did not start are resumable",
          '       with the same --state in a later window',
        ]
      : []),
    ...(codes.signals === false
      ? []
      : [
          '  130  stopped by Ctrl-C (SIGINT): lines in flight finish for 30 s, then are reported interrupted',
          '  143  stopped by SIGTERM, the same way',
        ]),
  ];
  return command.addHelpText('after', ['', 'Environment:', ...env, '', 'Exit codes:', ...exits].join('\n'));
}

/** `--report` and `--quiet`, as every command but `status` has them. */
export function reportOptions(command: Command): Command {
  return command
    .option('--report <dir>', 'report folder (default import-report-<UTC timestamp>)')
    .option('--quiet', 'print only the summary', false);
}
