import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  type WriteStream,
} from 'node:fs';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import { successes, type Outcome, type Result } from './outcomes.js';
import { page } from './report-page.js';
import {
  notAccountCount,
  OneRun,
  rate,
  round,
  timeline,
  totals,
  zeroCounts,
  type RunEnd,
  type RunHistory,
  type RunRecord,
  type Totals,
} from './run-history.js';

/** The failed accounts the HTML page lists (all of them are in results.jsonl and results.csv). */
const MAX_LISTED_FAILURES = 1_000;
/** How often a run's record is saved in the history while it works (what a killed run leaves). */
const CHECKPOINT_MS = 5_000;

export type Summary = {
  command: string;
  /** The options in effect (defaults included), secrets redacted. */
  options: Record<string, unknown>;
  run: number;
  started_at: string;
  finished_at: string;
  seconds: number;
  cpu_seconds: number;
  lines: number;
  skipped_done_earlier: number;
  sent: number;
  by_outcome: Record<Outcome, number>;
  by_error_code: Record<string, number>;
  accounts_per_s: number;
  server_throttled: number;
  interrupted: boolean;
  /** Every run of the history (this one last), without their per-second throughput. */
  runs: Omit<RunRecord, 'throughput'>[];
  total: Totals;
  /** `reconcile` only: the differences by field and the money difference (see `client/reconcile/tally.ts`). */
  reconciliation?: Record<string, unknown>;
  /** The lines in flight (see concurrency.ts): fixed or adaptive, its peak, the share of refused requests. */
  concurrency?: Record<string, unknown>;
};

export type ReportOptions = {
  /** The command line (see command.ts: secrets redacted). */
  command: string;
  options?: Record<string, unknown>;
  /** Where earlier runs are and this one is recorded; without one the report knows this run only. */
  history?: RunHistory;
  /** How often the server asked the client to wait so far. */
  throttled?: () => number;
  /** The outcomes the command can end a line with (default: those of validate, migrate and post-import). */
  outcomes?: readonly Outcome[];
  /** A section of its own in the summary and the page (reconcile's differences), fed every result. */
  extension?: ReportExtension;
  /** What the concurrency did over the run, for the summary. */
  concurrency?: () => Record<string, unknown>;
};

/** What a command adds to its report: a summary member and data its part of the page shows. */
export interface ReportExtension {
  /** The member of `summary.json` it fills. */
  readonly name: string;
  add(result: Result): void;
  summary(): Record<string, unknown>;
}

/**
 * The report of a run, written as it goes: `results.jsonl` line by line as accounts finish (in finishing
 * order), and at the end `results.csv` (streamed from the JSON lines), `summary.json` and `report.html`, which
 * show this run and every earlier run of the history. What it keeps in memory is bounded whatever the file's
 * length: counts, per-second throughput, error codes with their paths, and the first failures for the page.
 * A folder that holds an earlier report keeps it, moved to `earlier/<its start>/`.
 */
export class ReportWriter {
  private readonly jsonl: WriteStream;
  private readonly started = Date.now();
  /** Outcomes of the lines this run sent (lines done in an earlier run are in `skippedDoneEarlier`). */
  readonly counts: Record<Outcome, number>;
  private readonly codes = new Map<string, Map<string, number>>();
  private readonly perSecond = new Map<number, number>();
  private readonly failures: Result[] = [];
  private readonly history: RunHistory;
  private readonly checkpoint: NodeJS.Timeout | null = null;
  private run = 0;
  lines = 0;
  skippedDoneEarlier = 0;

  constructor(
    readonly dir: string,
    private readonly options: ReportOptions,
  ) {
    this.counts = zeroCounts(options.outcomes);
    mkdirSync(dir, { recursive: true });
    keepEarlierReport(dir);
    this.jsonl = createWriteStream(join(dir, 'results.jsonl'));
    this.history = options.history ?? new OneRun();
    this.run = this.history.beginRun(this.record('unfinished'));
    if (options.history) {
      const checkpoint = setInterval(() => {
        try {
          this.history.saveRun(this.record('unfinished'));
        } catch {
          // The history is closed (the run failed before its end): nothing more to record.
          clearInterval(checkpoint);
        }
      }, CHECKPOINT_MS);
      checkpoint.unref();
      this.checkpoint = checkpoint;
    }
  }

  add(result: Result): void {
    this.lines++;
    this.jsonl.write(JSON.stringify(result) + '\n');
    // Done in an earlier run: not sent, so neither an outcome of this run nor part of its throughput.
    if (result.done_earlier) {
      this.skippedDoneEarlier++;
      return;
    }
    this.counts[result.outcome]++;
    this.options.extension?.add(result);
    const second = Math.floor((Date.now() - this.started) / 1000);
    this.perSecond.set(second, (this.perSecond.get(second) ?? 0) + 1);
    for (const { code, attr } of result.errors) {
      const attrs = this.codes.get(code) ?? new Map<string, number>();
      attrs.set(attr, (attrs.get(attr) ?? 0) + 1);
      this.codes.set(code, attrs);
    }
    if (!successes.has(result.outcome) && this.failures.length < MAX_LISTED_FAILURES)
      this.failures.push(result);
  }

  /** Resolves once the results file has taken what it was given: the run reads on only then (bounded memory). */
  async drained(): Promise<void> {
    if (this.jsonl.writableNeedDrain) await once(this.jsonl, 'drain');
  }

  /** This run as the history keeps it, at `now`. */
  private record(ended: RunEnd, now = Date.now()): RunRecord {
    const seconds = (now - this.started) / 1000;
    const sent = this.lines - this.skippedDoneEarlier;
    const last = Math.max(-1, ...this.perSecond.keys());
    return {
      run: this.run,
      command: this.options.command,
      started_at: new Date(this.started).toISOString(),
      finished_at: ended === 'unfinished' ? null : new Date(now).toISOString(),
      ended,
      seconds: round(seconds, 3),
      cpu_seconds: cpuSeconds(),
      lines: this.lines,
      skipped_done_earlier: this.skippedDoneEarlier,
      sent,
      by_outcome: { ...this.counts },
      accounts_per_s: rate(sent - notAccountCount(this.counts), seconds),
      server_throttled: this.options.throttled?.() ?? 0,
      throughput: Array.from({ length: last + 1 }, (_, s) => this.perSecond.get(s) ?? 0),
    };
  }

  async finish(extra: { interrupted: boolean }): Promise<Summary> {
    if (this.checkpoint) clearInterval(this.checkpoint);
    await new Promise<void>((resolve, reject) =>
      this.jsonl.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
    await writeCsv(this.dir, this.options.extension !== undefined);
    const record = this.record(extra.interrupted ? 'interrupted' : 'completed');
    this.history.saveRun(record);
    const runs = this.history.runs();
    const byCode = Object.fromEntries(
      [...this.codes.entries()]
        .map(([code, attrs]) => [code, [...attrs.values()].reduce((a, b) => a + b, 0)] as const)
        .sort((a, b) => b[1] - a[1]),
    );
    const summary: Summary = {
      command: record.command,
      options: this.options.options ?? {},
      run: record.run,
      started_at: record.started_at,
      finished_at: record.finished_at!,
      seconds: record.seconds,
      cpu_seconds: record.cpu_seconds,
      lines: record.lines,
      skipped_done_earlier: record.skipped_done_earlier,
      sent: record.sent,
      by_outcome: record.by_outcome,
      by_error_code: byCode,
      accounts_per_s: record.accounts_per_s,
      server_throttled: record.server_throttled,
      interrupted: extra.interrupted,
      runs: runs.map(({ throughput: _, ...run }) => run),
      total: totals(runs, this.options.outcomes),
      ...(this.options.concurrency ? { concurrency: this.options.concurrency() } : {}),
      ...(this.options.extension ? { [this.options.extension.name]: this.options.extension.summary() } : {}),
    };
    writeFileSync(join(this.dir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    writeFileSync(join(this.dir, 'report.html'), this.html(summary, runs));
    return summary;
  }

  private html(summary: Summary, runs: RunRecord[]): string {
    const codes = [...this.codes.entries()]
      .map(([code, attrs]) => ({
        code,
        total: [...attrs.values()].reduce((a, b) => a + b, 0),
        attrs: [...attrs.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10),
      }))
      .sort((a, b) => b.total - a.total);
    const data = { summary, timeline: timeline(runs), codes, failures: this.failures };
    // Inlined: the page makes no request of its own (it is opened from disk, often offline).
    // The package exports no path to its UMD build; it sits next to the CommonJS entry.
    const entry = createRequire(import.meta.url).resolve('chart.js');
    const chartJs = readFileSync(join(dirname(entry), 'chart.umd.min.js'), 'utf8');
    const json = JSON.stringify(data).replaceAll('<', '\\u003c');
    return page(chartJs, json);
  }
}

const REPORT_FILES = ['results.jsonl', 'results.csv', 'summary.json', 'report.html'];

/** An earlier report in `dir` is moved to `earlier/<its start>/` rather than written over. */
function keepEarlierReport(dir: string): void {
  const present = REPORT_FILES.filter((f) => existsSync(join(dir, f)));
  if (present.length === 0) return;
  let started: string | undefined;
  try {
    started = (JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { started_at?: string })
      .started_at;
  } catch {
    // No summary (a run that died before its end): named by the time of its results.
  }
  const at = started ?? statSync(join(dir, present[0]!)).mtime.toISOString();
  const name = at.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  let target = join(dir, 'earlier', name);
  for (let n = 2; existsSync(target); n++) target = join(dir, 'earlier', `${name}-${n}`);
  mkdirSync(target, { recursive: true });
  for (const f of present) renameSync(join(dir, f), join(target, f));
}

/** `results.csv` from `results.jsonl`; with `differences`, a column of them (`field=expected->actual`, by spaces). */
async function writeCsv(dir: string, differences: boolean): Promise<void> {
  const lines = createInterface({ input: createReadStream(join(dir, 'results.jsonl')), crlfDelay: Infinity });
  async function* rows() {
    for await (const line of lines) {
      if (!line) continue;
      const r = JSON.parse(line) as Result;
      yield {
        ...r,
        errors: r.errors.map((e) => `${e.code}@${e.attr}`).join(' '),
        done_earlier: r.done_earlier ? 'true' : '',
        differences: (r.differences ?? []).map((d) => `${d.field}=${d.expected}->${d.actual}`).join(' '),
      };
    }
  }
  const columns = [
    'line',
    'import_supplier',
    'external_account_number',
    'outcome',
    'http_status',
    'kraken_account_number',
    'errors',
    'attempts',
    'ms',
    'done_earlier',
    ...(differences ? ['differences'] : []),
  ];
  await pipeline(rows(), stringify({ header: true, columns }), createWriteStream(join(dir, 'results.csv')));
}

function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 10_000) / 100;
}
