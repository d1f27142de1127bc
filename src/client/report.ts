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
import { outcomes, successes, type Outcome, type Result } from './outcomes.js';

/** The failed accounts the HTML page lists (all of them are in results.jsonl and results.csv). */
const MAX_LISTED_FAILURES = 1_000;
/** How often a run's record is saved in the history while it works (what a killed run leaves). */
const CHECKPOINT_MS = 5_000;
/** The most bars the throughput chart draws: beyond, the seconds are grouped. */
const MAX_BARS = 600;

/** How a run ended: `unfinished` is a run that never recorded its end (killed, crashed, or still running). */
export type RunEnd = 'completed' | 'interrupted' | 'unfinished';

/** One run, as the history keeps it. Only the lines the run handled itself count in its outcomes and rate. */
export type RunRecord = {
  run: number;
  command: string;
  started_at: string;
  /** Null for an `unfinished` run: its `seconds` then run to its last saved record. */
  finished_at: string | null;
  ended: RunEnd;
  seconds: number;
  /** CPU time the client itself used (user + system), to size the machine it runs on. */
  cpu_seconds: number;
  /** Input lines the run reported: `skipped_done_earlier` + `sent`. */
  lines: number;
  /** Lines not sent: the resume state says an earlier run created them (or found them already imported). */
  skipped_done_earlier: number;
  /** Lines the run handled itself (sent to the service, or found unparsable before sending). */
  sent: number;
  /** Outcomes of the `sent` lines. */
  by_outcome: Record<Outcome, number>;
  /** Accounts (sent lines but parse errors) per second of the run. */
  accounts_per_s: number;
  server_throttled: number;
  /** Sent lines finished in each second of the run (the chart). */
  throughput: number[];
};

/** Where the runs of one migration are kept (the resume state of `migrate`; see docs/client.md). */
export interface RunHistory {
  /** Records a run that starts; its number. */
  beginRun(record: RunRecord): number;
  /** Replaces the record of run `record.run`. */
  saveRun(record: RunRecord): void;
  /** Every run recorded, oldest first. */
  runs(): RunRecord[];
}

/** Sums over every run: time and CPU spent running, lines sent, their outcomes, the rate over them. */
export type Totals = {
  runs: number;
  started_at: string;
  finished_at: string | null;
  seconds: number;
  cpu_seconds: number;
  sent: number;
  by_outcome: Record<Outcome, number>;
  accounts_per_s: number;
  server_throttled: number;
};

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
};

/** What a command adds to its report: a summary member and data its part of the page shows. */
export interface ReportExtension {
  /** The member of `summary.json` it fills. */
  readonly name: string;
  add(result: Result): void;
  summary(): Record<string, unknown>;
}

const zeroCounts = (list: readonly Outcome[] = outcomes) =>
  Object.fromEntries(list.map((o) => [o, 0])) as Record<Outcome, number>;
const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;
const rate = (n: number, seconds: number) => (seconds > 0 && n > 0 ? round(n / seconds, 1) : 0);

/** An in-memory history: the report of a command with no resume state knows its own run only. */
class OneRun implements RunHistory {
  private record: RunRecord | null = null;
  beginRun(record: RunRecord): number {
    this.record = { ...record, run: 1 };
    return 1;
  }
  saveRun(record: RunRecord): void {
    this.record = record;
  }
  runs(): RunRecord[] {
    return this.record ? [this.record] : [];
  }
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
      accounts_per_s: rate(sent - this.counts.parse_error, seconds),
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

/** Sums over `runs` (the rate: accounts sent in every run over the seconds of every run). */
export function totals(
  runs: readonly Omit<RunRecord, 'throughput'>[],
  list: readonly Outcome[] = outcomes,
): Totals {
  const byOutcome = zeroCounts(list);
  let seconds = 0;
  let cpu = 0;
  let sent = 0;
  let throttled = 0;
  for (const run of runs) {
    seconds += run.seconds;
    cpu += run.cpu_seconds;
    sent += run.sent;
    throttled += run.server_throttled;
    for (const o of list) byOutcome[o] += run.by_outcome[o] ?? 0;
  }
  return {
    runs: runs.length,
    started_at: runs[0]?.started_at ?? '',
    finished_at: runs.at(-1)?.finished_at ?? null,
    seconds: round(seconds, 3),
    cpu_seconds: round(cpu, 2),
    sent,
    by_outcome: byOutcome,
    accounts_per_s: rate(sent - byOutcome.parse_error, seconds),
    server_throttled: throttled,
  };
}

/**
 * The throughput chart over every run, one after the other (the time between runs left out): accounts per
 * second, in bars of one second, or of more when the runs are long (at most `MAX_BARS` bars). A run is as long
 * as it ran, so a run that sent nothing is a flat stretch, not a bar at 0 s.
 */
export function timeline(runs: readonly Pick<RunRecord, 'run' | 'seconds' | 'throughput'>[]) {
  const length = (r: (typeof runs)[number]) => Math.max(1, Math.ceil(r.seconds), r.throughput.length);
  const all = runs.reduce((n, r) => n + length(r), 0);
  const step = Math.max(1, Math.ceil(all / MAX_BARS));
  const bars: { run: number; at: string; rate: number }[] = [];
  for (const r of runs) {
    const seconds = length(r);
    for (let from = 0; from < seconds; from += step) {
      const to = Math.min(seconds, from + step);
      let n = 0;
      for (let s = from; s < to; s++) n += r.throughput[s] ?? 0;
      bars.push({ run: r.run, at: clock(from), rate: round(n / (to - from), 2) });
    }
  }
  return { step, bars };
}

/** Seconds as `42 s`, `3:05` or `1:02:05`. */
function clock(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
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

function page(chartJs: string, json: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Migration report</title>
<style>
  body { font: 15px/1.45 system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 18px 28px; }
  header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; opacity: .8; font-size: 13px; word-break: break-all; }
  main { padding: 20px 28px; max-width: 1200px; }
  h2.part { font-size: 17px; margin: 0 0 4px; } p.lead { margin: 0 0 12px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 12px; margin-bottom: 20px; }
  .card { background: #fff; border-radius: 8px; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  .card .n { font-size: 26px; font-weight: 600; } .card .l { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #5b6475; }
  .ok .n { color: #16794c; } .bad .n { color: #b42318; } .warn .n { color: #a15c07; } .earlier .n { color: #3d5a80; }
  section { background: #fff; border-radius: 8px; padding: 14px 18px; margin-bottom: 20px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 16px; margin: 0 0 10px; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; }
  th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e6e8ec; vertical-align: top; }
  th { color: #5b6475; font-weight: 600; } code { font-size: 12px; }
  #runs td.num, #runs th.num, #fields td.num, #fields th.num { text-align: right; } #runs tr.current td { background: #eef4ff; } #runs tfoot td { font-weight: 600; border-bottom: 0; } #runs td:nth-child(2) { white-space: nowrap; }
  .muted { color: #5b6475; font-size: 12px; }
</style>
</head>
<body>
<header><h1>Migration report</h1><p id="meta"></p></header>
<main>
  <h2 class="part" id="thisrun"></h2>
  <p class="lead" id="runline"></p>
  <div class="cards" id="cards"></div>
  <section><h2>Every run of this migration</h2><p class="muted" id="runsnote"></p>
    <table id="runs"><thead><tr><th>Run</th><th>Started</th><th class="num">Duration</th><th>Ended</th><th class="num">Lines read</th><th class="num">Skipped (done in an earlier run)</th><th class="num">Sent</th><th class="num">Succeeded</th><th class="num">Did not succeed</th><th class="num">Accounts/s</th><th class="num">CPU s</th><th class="num">Server waits</th></tr></thead><tbody></tbody><tfoot></tfoot></table></section>
  <section><h2>Throughput over every run (accounts sent and finished per second)</h2><p class="muted" id="chartnote"></p><canvas id="throughput" height="90"></canvas></section>
  <section id="mismatches" hidden><h2>Mismatches by field</h2><p class="lead" id="moneyline"></p><p class="muted" id="mismatchnote"></p>
    <table id="fields"><thead><tr><th>Field</th><th class="num">Accounts</th><th class="num">Money difference</th><th>First accounts (expected → actual)</th></tr></thead><tbody></tbody></table></section>
  <section><h2>Error codes of this run, most frequent first</h2><table id="codes"><thead><tr><th>Code</th><th>Count</th><th>Paths (attr)</th></tr></thead><tbody></tbody></table></section>
  <section><h2>Accounts that did not succeed in this run</h2><p class="muted" id="failnote"></p><table id="failures"><thead><tr><th>Line</th><th>Account</th><th>Outcome</th><th>HTTP</th><th>Errors</th></tr></thead><tbody></tbody></table></section>
</main>
<script>${chartJs}</script>
<script>
const data = ${json};
const s = data.summary;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
// A digest is 64 hex digits: its first 12 tell two apart on screen (the whole of it is in the results files).
const short = (v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v) ? v.slice(0, 12) + '…' : v;
const good = new Set(['created', 'already_imported', 'dry_run_ok', 'matched']);
const warn = new Set(['skipped', 'supplier_closed', 'duplicate']);
const duration = (sec) => sec < 60 ? (Math.round(sec * 10) / 10) + ' s' : Math.floor(sec / 60) + ' min ' + Math.round(sec % 60) + ' s';
const when = (iso) => iso ? iso.slice(0, 19).replace('T', ' ') + ' UTC' : '';
const sum = (counts, keep) => Object.entries(counts).filter(([o]) => keep(o)).reduce((n, [, v]) => n + v, 0);
document.getElementById('meta').textContent = s.command + ' · started ' + when(s.started_at);
document.getElementById('thisrun').textContent = 'Run ' + s.run + ' of ' + s.total.runs + (s.interrupted ? ' (interrupted)' : '');
document.getElementById('runline').textContent = s.lines + ' lines read: ' + s.sent + ' sent, ' + s.skipped_done_earlier + ' skipped (done in an earlier run) · ' + (s.sent > 0 ? s.accounts_per_s + ' accounts/s over the lines sent' : 'nothing sent') + ' · ' + duration(s.seconds) + ' · CPU ' + s.cpu_seconds + ' s';
for (const [outcome, n] of Object.entries(s.by_outcome)) {
  const card = el('div', undefined, 'card ' + (good.has(outcome) ? 'ok' : warn.has(outcome) ? 'warn' : n > 0 ? 'bad' : ''));
  card.dataset.outcome = outcome;
  card.append(el('div', n, 'n'), el('div', outcome.replaceAll('_', ' '), 'l'));
  document.getElementById('cards').append(card);
}
if (s.skipped_done_earlier > 0 || s.total.runs > 1) {
  const card = el('div', undefined, 'card earlier');
  card.dataset.outcome = 'done_earlier';
  card.append(el('div', s.skipped_done_earlier, 'n'), el('div', 'skipped (done in an earlier run)', 'l'));
  document.getElementById('cards').append(card);
}
const ended = { completed: 'completed', interrupted: 'interrupted', unfinished: 'did not finish (killed or crashed)' };
const runRow = (cells) => { const tr = el('tr'); for (const [text, num] of cells) tr.append(el('td', text, num ? 'num' : undefined)); return tr; };
const runs = document.querySelector('#runs tbody');
for (const r of s.runs) {
  const tr = runRow([
    ['#' + r.run + (r.run === s.run ? ' (this report)' : '')], [when(r.started_at)], [(r.ended === 'unfinished' ? '≥ ' : '') + duration(r.seconds), true], [ended[r.ended] ?? r.ended],
    [r.lines, true], [r.skipped_done_earlier, true], [r.sent, true], [sum(r.by_outcome, (o) => good.has(o)), true], [sum(r.by_outcome, (o) => !good.has(o)), true],
    [r.sent > 0 ? r.accounts_per_s : '—', true], [r.cpu_seconds, true], [r.server_throttled, true],
  ]);
  tr.dataset.run = r.run;
  if (r.run === s.run) tr.className = 'current';
  runs.append(tr);
}
const t = s.total;
const totalRow = runRow([
  ['All runs'], [when(t.started_at)], [duration(t.seconds), true], [''], ['', true], ['', true], [t.sent, true],
  [sum(t.by_outcome, (o) => good.has(o)), true], [sum(t.by_outcome, (o) => !good.has(o)), true], [t.sent > 0 ? t.accounts_per_s : '—', true], [t.cpu_seconds, true], [t.server_throttled, true],
]);
totalRow.id = 'total';
document.querySelector('#runs tfoot').append(totalRow);
document.getElementById('runsnote').textContent = 'A line done in an earlier run (created, or found already imported) is not sent again: it counts as skipped, never as a success of the run that skipped it, and its time is not in that run’s rate. A line that did not succeed is sent again by the next run, so it counts once in each run that sent it. Durations are the time each run ran (the time between runs is left out).';
const bars = data.timeline.bars;
const palette = ['#2f6fde', '#e07b39', '#2a9d8f', '#8e5dc9', '#c4475a', '#6b8e23'];
document.getElementById('chartnote').textContent = 'Runs one after the other, each in its own colour (#run time into the run)' + (data.timeline.step > 1 ? '; each bar is ' + data.timeline.step + ' s' : '') + '. Lines done in an earlier run are not counted.';
new Chart(document.getElementById('throughput'), {
  type: 'bar',
  data: { labels: bars.map((b) => '#' + b.run + ' ' + b.at), datasets: [{ label: 'accounts/s', data: bars.map((b) => b.rate), backgroundColor: bars.map((b) => palette[(b.run - 1) % palette.length]), barPercentage: 1, categoryPercentage: 1 }] },
  options: { animation: false, plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true } } },
});
const codes = document.querySelector('#codes tbody');
if (data.codes.length === 0) codes.append(Object.assign(el('tr'), { innerHTML: '<td colspan="3" class="muted">No errors.</td>' }));
for (const c of data.codes) {
  const tr = el('tr');
  tr.append(el('td'), el('td', c.total), el('td', c.attrs.map(([a, n]) => a + ' (' + n + ')').join(', ')));
  tr.firstChild.append(el('code', c.code));
  codes.append(tr);
}
const failures = document.querySelector('#failures tbody');
document.getElementById('failnote').textContent = data.failures.length === 0 ? 'None.' : 'The first ' + data.failures.length + ' (every line is in results.jsonl and results.csv).';
for (const f of data.failures) {
  const tr = el('tr');
  const problems = [...f.errors.map((e) => e.code + ' @ ' + e.attr), ...(f.differences ?? []).map((d) => d.field + ': ' + short(d.expected) + ' → ' + short(d.actual))];
  tr.append(el('td', f.line), el('td', (f.import_supplier ?? '') + ' / ' + (f.external_account_number ?? '')), el('td', f.outcome), el('td', f.http_status ?? ''), el('td', problems.join(', ')));
  failures.append(tr);
}
const r = s.reconciliation;
if (r) {
  document.getElementById('mismatches').hidden = false;
  document.getElementById('moneyline').textContent = 'Total money difference: ' + r.money_difference + ' (the sum of |expected − actual| over every balance) · ' + r.accounts_compared + ' accounts compared, ' + (s.by_outcome.mismatched ?? 0) + ' mismatched';
  document.getElementById('mismatchnote').textContent = 'Each field that differed, with how many accounts it differed on; expected values are worked out from the files sent, actual ones are the service’s.';
  const fields = document.querySelector('#fields tbody');
  const rows = Object.entries(r.by_field);
  if (rows.length === 0) fields.append(Object.assign(el('tr'), { innerHTML: '<td colspan="4" class="muted">No differences.</td>' }));
  for (const [field, f] of rows) {
    const tr = el('tr');
    tr.dataset.field = field;
    tr.append(el('td'), el('td', f.accounts, 'num'), el('td', f.money_difference ?? '', 'num'), el('td', f.examples.map((x) => x.external_account_number + ' (' + short(x.expected) + ' → ' + short(x.actual) + ')').join(', ')));
    tr.firstChild.append(el('code', field));
    fields.append(tr);
  }
}
</script>
</body>
</html>
`;
}

function cpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 10_000) / 100;
}
