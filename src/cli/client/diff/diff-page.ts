/**
 * The diff's page (`diff.html`): one self-contained file that works offline (no script or style from
 * elsewhere), the diff's summary and its first accounts embedded as JSON and drawn by the script below: a card
 * per category, the error codes of each with their paths, and the accounts that changed or still fail.
 */
export function diffPage(json: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Migration runs compared</title>
<style>
  body { font: 15px/1.45 system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 18px 28px; }
  header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; opacity: .8; font-size: 13px; word-break: break-all; }
  main { padding: 20px 28px; max-width: 1200px; }
  .cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 12px; margin-bottom: 20px; }
  .card { background: #fff; border-radius: 8px; padding: 12px 14px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  .card .n { font-size: 26px; font-weight: 600; } .card .l { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: #5b6475; }
  .ok .n { color: #16794c; } .bad .n { color: #b42318; } .warn .n { color: #a15c07; } .info .n { color: #3d5a80; }
  section { background: #fff; border-radius: 8px; padding: 14px 18px; margin-bottom: 20px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
  h2 { font-size: 16px; margin: 0 0 10px; }
  table { border-collapse: collapse; width: 100%; font-size: 13px; }
  th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #e6e8ec; vertical-align: top; }
  th { color: #5b6475; font-weight: 600; } td.num, th.num { text-align: right; }
  .muted { color: #5b6475; font-size: 12px; }
</style>
</head>
<body>
<header><h1>Migration runs compared</h1><p id="meta"></p></header>
<main>
  <div class="cards" id="cards"></div>
  <section><h2>Error codes by category, with their paths</h2><table id="codes"><thead><tr><th>Category</th><th>Code</th><th class="num">Accounts</th><th>Paths (attr)</th></tr></thead><tbody></tbody></table></section>
  <section><h2>Accounts that changed or still fail</h2><p class="muted" id="listnote"></p><table id="accounts"><thead><tr><th>Account</th><th>Category</th><th>Run A</th><th>Run B</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
const data = ${json};
const s = data.summary;
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; };
const labels = { fixed: 'fixed', still_failing_same_code: 'still failing (same code)', still_failing_changed_code: 'still failing (code changed)', newly_failing: 'newly failing', fixed_mismatch: 'mismatch fixed', newly_mismatched: 'newly mismatched', only_in_a: 'only in run A', only_in_b: 'only in run B', still_ok: 'succeeded in both' };
const tone = { fixed: 'ok', fixed_mismatch: 'ok', still_ok: 'ok', newly_failing: 'bad', newly_mismatched: 'bad', still_failing_same_code: 'warn', still_failing_changed_code: 'warn', only_in_a: 'info', only_in_b: 'info' };
document.getElementById('meta').textContent = 'A: ' + s.a + ' \u2014 B: ' + s.b + ' \u2014 ' + s.accounts + ' accounts';
const cards = document.getElementById('cards');
for (const [category, n] of Object.entries(s.counts)) {
  if (n === 0 && (category === 'fixed_mismatch' || category === 'newly_mismatched')) continue;
  const card = el('div', undefined, 'card ' + tone[category]);
  card.dataset.category = category;
  card.append(el('div', n, 'n'), el('div', labels[category], 'l'));
  cards.append(card);
}
const codes = document.querySelector('#codes tbody');
for (const [category, byCode] of Object.entries(s.by_code)) for (const [code, c] of Object.entries(byCode)) {
  const tr = el('tr');
  tr.dataset.category = category;
  const paths = Object.entries(c.attrs).slice(0, 10).map(([attr, n]) => attr + ' (' + n + ')').join(', ');
  tr.append(el('td', labels[category]), el('td', code), el('td', c.accounts, 'num'), el('td', paths));
  codes.append(tr);
}
const side = (x) => x ? x.outcome + (x.errors.length ? ': ' + x.errors.map((e) => e.code + '@' + e.attr).join(' ') : '') + ' (line ' + x.line + ')' : '\u2014';
const rows = document.querySelector('#accounts tbody');
for (const d of data.accounts) {
  const tr = el('tr');
  tr.dataset.category = d.category;
  tr.append(el('td', (d.import_supplier ?? '?') + ' / ' + (d.external_account_number ?? '?')), el('td', labels[d.category]), el('td', side(d.a)), el('td', side(d.b)));
  rows.append(tr);
}
const changed = s.accounts - s.counts.still_ok;
document.getElementById('listnote').textContent = data.accounts.length < changed ? 'The first ' + data.accounts.length + ' of ' + changed + ' (all of them are in diff.jsonl).' : changed + ' accounts (also in diff.jsonl).';
</script>
</body>
</html>
`;
}
