/**
 * The report's page (`report.html`): one self-contained file that works offline, Chart.js inlined, the run's
 * data embedded as JSON and drawn by the script below (counts, runs, throughput, error codes, failures, and for
 * `reconcile` the mismatches by field).
 */
export function page(chartJs: string, json: string): string {
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
const warn = new Set(['skipped', 'supplier_closed', 'duplicate', 'duplicate_line', 'interrupted']);
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
