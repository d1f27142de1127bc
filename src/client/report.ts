import {
  createReadStream,
  createWriteStream,
  mkdirSync,
  readFileSync,
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

export type Summary = {
  command: string;
  started_at: string;
  finished_at: string;
  seconds: number;
  /** CPU time the client itself used (user + system), to size the machine it runs on. */
  cpu_seconds: number;
  lines: number;
  by_outcome: Record<Outcome, number>;
  by_error_code: Record<string, number>;
  accounts_per_s: number;
  server_throttled: number;
  interrupted: boolean;
};

/**
 * The report of a run, written as it goes: `results.jsonl` line by line as accounts finish (in finishing
 * order), and at the end `results.csv` (streamed from the JSON lines), `summary.json` and `report.html`.
 * What it keeps in memory is bounded whatever the file's length: counts, per-second throughput, error codes
 * with their paths, and the first failures for the page.
 */
export class ReportWriter {
  private readonly jsonl: WriteStream;
  private readonly started = Date.now();
  readonly counts = Object.fromEntries(outcomes.map((o) => [o, 0])) as Record<Outcome, number>;
  private readonly codes = new Map<string, Map<string, number>>();
  private readonly perSecond = new Map<number, number>();
  private readonly failures: Result[] = [];
  lines = 0;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.jsonl = createWriteStream(join(dir, 'results.jsonl'));
  }

  add(result: Result): void {
    this.lines++;
    this.counts[result.outcome]++;
    this.jsonl.write(JSON.stringify(result) + '\n');
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

  async finish(command: string, extra: { throttled: number; interrupted: boolean }): Promise<Summary> {
    await new Promise<void>((resolve, reject) =>
      this.jsonl.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
    await writeCsv(this.dir);
    const finished = Date.now();
    const seconds = (finished - this.started) / 1000;
    const processed = this.lines - this.counts.parse_error;
    const byCode = Object.fromEntries(
      [...this.codes.entries()]
        .map(([code, attrs]) => [code, [...attrs.values()].reduce((a, b) => a + b, 0)] as const)
        .sort((a, b) => b[1] - a[1]),
    );
    const summary: Summary = {
      command,
      started_at: new Date(this.started).toISOString(),
      finished_at: new Date(finished).toISOString(),
      seconds: Math.round(seconds * 10) / 10,
      cpu_seconds: cpuSeconds(),
      lines: this.lines,
      by_outcome: this.counts,
      by_error_code: byCode,
      accounts_per_s: seconds > 0 ? Math.round((processed / seconds) * 10) / 10 : 0,
      server_throttled: extra.throttled,
      interrupted: extra.interrupted,
    };
    writeFileSync(join(this.dir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    writeFileSync(join(this.dir, 'report.html'), this.html(summary));
    return summary;
  }

  private html(summary: Summary): string {
    const seconds = Math.max(0, ...this.perSecond.keys());
    const throughput = Array.from({ length: seconds + 1 }, (_, s) => this.perSecond.get(s) ?? 0);
    const codes = [...this.codes.entries()]
      .map(([code, attrs]) => ({
        code,
        total: [...attrs.values()].reduce((a, b) => a + b, 0),
        attrs: [...attrs.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10),
      }))
      .sort((a, b) => b.total - a.total);
    const data = { summary, throughput, codes, failures: this.failures };
    // Inlined: the page makes no request of its own (it is opened from disk, often offline).
    // The package exports no path to its UMD build; it sits next to the CommonJS entry.
    const entry = createRequire(import.meta.url).resolve('chart.js');
    const chartJs = readFileSync(join(dirname(entry), 'chart.umd.min.js'), 'utf8');
    const json = JSON.stringify(data).replaceAll('<', '\\u003c');
    return page(chartJs, json);
  }
}

async function writeCsv(dir: string): Promise<void> {
  const lines = createInterface({ input: createReadStream(join(dir, 'results.jsonl')), crlfDelay: Infinity });
  async function* rows() {
    for await (const line of lines) {
      if (!line) continue;
      const r = JSON.parse(line) as Result;
      yield {
        ...r,
        errors: r.errors.map((e) => `${e.code}@${e.attr}`).join(' '),
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
  header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; opacity: .8; font-size: 13px; }
  main { padding: 20px 28px; max-width: 1200px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 12px; margin-bottom: 20px; }
  .card { background: #fff; border-radius: 8px; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  .card .n { font-size: 26px; font-weight: 600; } .card .l { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #5b6475; }
  .ok .n { color: #16794c; } .bad .n { color: #b42318; } .warn .n { color: #a15c07; }
  section { background: #fff; border-radius: 8px; padding: 14px 18px; margin-bottom: 20px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 16px; margin: 0 0 10px; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; }
  th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e6e8ec; vertical-align: top; }
  th { color: #5b6475; font-weight: 600; } code { font-size: 12px; }
  .muted { color: #5b6475; font-size: 12px; }
</style>
</head>
<body>
<header><h1>Migration report</h1><p id="meta"></p></header>
<main>
  <div class="cards" id="cards"></div>
  <section><h2>Throughput (accounts finished per second)</h2><canvas id="throughput" height="90"></canvas></section>
  <section><h2>Error codes, most frequent first</h2><table id="codes"><thead><tr><th>Code</th><th>Count</th><th>Paths (attr)</th></tr></thead><tbody></tbody></table></section>
  <section><h2>Accounts that did not succeed</h2><p class="muted" id="failnote"></p><table id="failures"><thead><tr><th>Line</th><th>Account</th><th>Outcome</th><th>HTTP</th><th>Errors</th></tr></thead><tbody></tbody></table></section>
</main>
<script>${chartJs}</script>
<script>
const data = ${json};
const s = data.summary;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
document.getElementById('meta').textContent = s.command + ' · ' + s.lines + ' lines in ' + s.seconds + ' s · ' + s.accounts_per_s + ' accounts/s' + (s.interrupted ? ' · interrupted' : '') + ' · ' + s.started_at;
const good = new Set(['created', 'already_imported', 'dry_run_ok']);
const warn = new Set(['skipped', 'supplier_closed']);
for (const [outcome, n] of Object.entries(s.by_outcome)) {
  const card = el('div', undefined, 'card ' + (good.has(outcome) ? 'ok' : warn.has(outcome) ? 'warn' : n > 0 ? 'bad' : ''));
  card.dataset.outcome = outcome;
  card.append(el('div', n, 'n'), el('div', outcome.replaceAll('_', ' '), 'l'));
  document.getElementById('cards').append(card);
}
new Chart(document.getElementById('throughput'), {
  type: 'bar',
  data: { labels: data.throughput.map((_, i) => i + ' s'), datasets: [{ label: 'accounts/s', data: data.throughput, backgroundColor: '#2f6fde', barPercentage: 1, categoryPercentage: 1 }] },
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
  tr.append(el('td', f.line), el('td', (f.import_supplier ?? '') + ' / ' + (f.external_account_number ?? '')), el('td', f.outcome), el('td', f.http_status ?? ''), el('td', f.errors.map((e) => e.code + ' @ ' + e.attr).join(', ')));
  failures.append(tr);
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
