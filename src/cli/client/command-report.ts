import { resolve } from 'node:path';
import { loadClientConfig } from '../../config.js';
import { commandLine, redact } from './command.js';
import type { Concurrency } from './concurrency.js';
import type { CreateGate } from './create-gate.js';
import type { ApiClient } from './http.js';
import { countLines } from './input.js';
import { successes, type Outcome } from './outcomes.js';
import { Progress } from './progress.js';
import { ReportWriter, type ReportExtension, type Summary } from './report.js';
import type { RunHistory } from './run-history.js';
import { stopExitCodes, type StopReason } from './stop.js';

// The report of an `import-client` command: its folder, starting it with the progress, and concluding it (the
// summary printed, the exit code).

export type Common = { report?: string; quiet?: boolean };

/** The report folder: `--report`, else `import-report-<UTC timestamp>` in the current folder. */
export function reportDir(options: Common): string {
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return resolve(options.report ?? `import-report-${stamp}`);
}

/** The secrets a report must never show: the API key (the token is recognised by its shape, see command.ts). */
const secrets = () => [loadClientConfig().IMPORT_API_KEY];

/**
 * The report and the progress of a command: the command line as it was given and the options in effect
 * (paths resolved), both with secrets redacted; the runs of `history` when there is one.
 */
export function startReport(
  dir: string,
  options: Common & Record<string, unknown>,
  extra: {
    history?: RunHistory;
    client?: ApiClient | null;
    state?: string;
    outcomes?: readonly Outcome[];
    extension?: ReportExtension;
    concurrency?: Concurrency;
    /** v1 `migrate`: the creates' pacing on the organisation's share, in the concurrency's summary. */
    creates?: CreateGate;
  } = {},
) {
  const effective = Object.fromEntries(
    Object.entries({ ...options, report: dir, ...(extra.state ? { state: extra.state } : {}) }).map(
      ([k, v]) => [
        k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
        typeof v === 'string' ? redact(v, secrets()) : v,
      ],
    ),
  );
  const report = new ReportWriter(dir, {
    command: commandLine('import-client', process.argv.slice(2), secrets()),
    options: effective,
    history: extra.history,
    throttled: () => extra.client?.throttled ?? 0,
    outcomes: extra.outcomes,
    extension: extra.extension,
    concurrency: extra.concurrency
      ? () => ({ ...extra.concurrency!.summary(), ...extra.creates?.summary() })
      : undefined,
  });
  const mode = options.quiet ? 'quiet' : process.stderr.isTTY ? 'tty' : 'plain';
  const progress = new Progress(mode, report.counts, extra.concurrency ?? null);
  return { report, progress };
}

/** How long a run waits for its input's lines to be counted before it starts (and counts on meanwhile). */
const COUNT_WAIT_MS = 1_000;

/**
 * The progress's total from the input file, counted before the run starts (a file is read at disk speed, far
 * faster than it is sent: a second for about a gigabyte here). A file too large to count within
 * `COUNT_WAIT_MS` is counted on while the run starts; standard input has no total.
 */
export async function planFrom(progress: Progress, file: string): Promise<void> {
  const counted = countLines(file)
    .then((n) => {
      if (n !== null) progress.plan(n);
    })
    .catch((err: unknown) => {
      // The run reads the file itself and reports what is wrong with it; the progress goes without a total.
      process.stderr.write(`[import-client] cannot count the lines of ${file}: ${(err as Error).message}\n`);
    });
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, COUNT_WAIT_MS)));
  await Promise.race([counted, waited]);
  clearTimeout(timer);
}

/**
 * The end of a command: the report written, its summary printed, the exit code set: 0 when every line
 * succeeded, 1 when some did not, or the code of the stop (`stopExitCodes`) when the run stopped early.
 */
export async function conclude(
  report: ReportWriter,
  progress: Progress,
  extra: { stopped: StopReason | null; unreadableInputs?: number },
): Promise<void> {
  progress.stop();
  const summary = await report.finish({ interrupted: extra.stopped !== null });
  process.stdout.write(JSON.stringify(summaryLine(summary, report.dir), null, 2) + '\n');
  const ok =
    (extra.unreadableInputs ?? 0) === 0 &&
    Object.entries(summary.by_outcome).every(
      ([o, n]) => n === 0 || successes.has(o as keyof typeof summary.by_outcome),
    );
  if (extra.stopped === 'key_refused')
    process.stderr.write(
      `error: the service refused the API key during the run (revoked?); the run stopped: lines in flight are reported interrupted, the lines after them were not sent (run again with a valid IMPORT_API_KEY)\n`,
    );
  if (extra.stopped === 'window_ended')
    process.stderr.write(
      `error: the window of the cohort plan ended: ${summary.by_outcome.interrupted} account(s) did not start (reported interrupted, plan_window_ended) and the rest of the input was not read; run again with the same --state in a later window (declare it with --window-start and --window-end)\n`,
    );
  process.exitCode = extra.stopped ? stopExitCodes[extra.stopped] : ok ? 0 : 1;
}

function summaryLine(summary: Summary, dir: string) {
  const counts = Object.fromEntries(Object.entries(summary.by_outcome).filter(([, n]) => n > 0));
  return {
    report: dir,
    run: summary.run,
    runs: summary.total.runs,
    lines: summary.lines,
    skipped_done_earlier: summary.skipped_done_earlier,
    sent: summary.sent,
    outcomes: counts,
    accounts_per_s: summary.accounts_per_s,
    seconds: summary.seconds,
    interrupted: summary.interrupted,
    ...(summary.concurrency ? { concurrency: summary.concurrency } : {}),
    ...(summary.reconciliation
      ? { money_difference: summary.reconciliation.money_difference, inputs: summary.reconciliation.inputs }
      : {}),
  };
}
