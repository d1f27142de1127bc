import { readdirSync, readFileSync } from 'node:fs';

/**
 * The cohort page (`GET /cohorts/`): its HTML and stylesheet, and its script. The script is ES modules of plain
 * browser JavaScript in files of their own (cohorts-page.client.js, the entry, and the modules it imports), so that
 * tsc type-checks them and eslint lints them; the server reads them once and serves them as they are (the build
 * copies them into dist/ beside this module). It signs in with the organisation's API key through the token
 * mutation (the key is never stored; the token stays in the tab's session storage), then polls the v2 progress
 * endpoints every few seconds (and the cohort plan's, for a supplier that has one: its resume is the page's only
 * write). Every asset comes from the service itself (Chart.js too, at /cohorts/chart.js); the
 * Content-Security-Policy of the route forbids anything else.
 */

export const COHORTS_BASE = '/cohorts/';

const here = new URL('.', import.meta.url);

/**
 * The page's scripts by file name, each served at COHORTS_BASE + its name (the name the modules import it by):
 * every *.client.js file beside this module, read from disk.
 */
export function readCohortsScripts(): Map<string, string> {
  const names = readdirSync(here).filter((name) => name.endsWith('.client.js'));
  return new Map(names.map((name) => [name, readFileSync(new URL(name, here), 'utf8')]));
}

export const cohortsHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cohort progress</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/cohorts/cohorts.css">
<script src="/cohorts/chart.js" defer></script>
<script type="module" src="/cohorts/cohorts-page.client.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header>
  <h1>Cohort progress</h1>
  <p id="updated" class="muted"></p>
  <button id="sign-out" type="button" hidden>Sign out</button>
</header>
<main id="main" tabindex="-1">
  <p id="problem" class="error" role="alert"></p>
  <section id="sign-in" hidden aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">Sign in</h2>
    <form id="sign-in-form">
      <label for="api-key">Organisation API key</label>
      <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck="false" required>
      <button type="submit">Sign in</button>
    </form>
    <p class="muted">The key is exchanged for a token that this tab keeps until it closes; the key itself is not kept.</p>
  </section>
  <section id="suppliers-view" hidden aria-labelledby="suppliers-title">
    <h2 id="suppliers-title">Suppliers</h2>
    <table id="suppliers">
      <thead><tr><th scope="col">Supplier</th><th scope="col">Status</th><th scope="col" class="num">Accounts</th><th scope="col" class="barcol">By status</th><th scope="col" class="num">Processed / min (5 min)</th><th scope="col" class="num">ETA</th><th scope="col" class="num">Creation slots</th></tr></thead>
      <tbody></tbody>
    </table>
    <ul class="legend" id="legend"></ul>
  </section>
  <section id="supplier-view" hidden aria-labelledby="supplier-title">
    <h2 id="supplier-title" tabindex="-1"></h2>
    <ul id="counts" class="counts"></ul>
    <p id="slots" class="muted"></p>
    <section id="plan-view" class="plan" hidden aria-labelledby="plan-title">
      <h3 id="plan-title" tabindex="-1">Cohort plan</h3>
      <div class="plan-grid">
        <div>
          <dl id="plan-facts" class="facts"></dl>
          <div id="plan-pause" class="pause" hidden>
            <p id="plan-pause-text" class="pause-text"></p>
            <p id="plan-pause-detail" class="muted"></p>
            <p id="plan-codes-title" hidden>The failing codes that tripped it (accounts):</p>
            <ul id="plan-codes"></ul>
            <button id="plan-resume" type="button">Resume</button>
          </div>
        </div>
        <div class="chart-box">
          <h4>Planned against actual</h4>
          <div class="canvas-box"><canvas id="plan-chart" role="img" aria-label="Accounts done over the last hour against the plan's line and the projected finish"></canvas></div>
          <p id="plan-chart-summary" class="muted"></p>
        </div>
      </div>
    </section>
    <div class="detail">
      <div class="chart-box">
        <h3>Per minute, last hour</h3>
        <div class="canvas-box"><canvas id="per-minute" role="img" aria-label="Accounts processed and errored per minute over the last hour"></canvas></div>
        <p id="chart-summary" class="muted"></p>
      </div>
      <div class="failures-box">
        <h3>Failures</h3>
        <table id="failures">
          <thead><tr><th scope="col">Code</th><th scope="col" class="num">Accounts</th><th scope="col">Top paths</th><th scope="col"><span class="sr">Accounts</span></th></tr></thead>
          <tbody></tbody>
        </table>
        <p id="no-failures" class="muted" hidden>No failed accounts.</p>
      </div>
    </div>
  </section>
  <section id="accounts-view" hidden aria-labelledby="accounts-title">
    <h2 id="accounts-title" tabindex="-1"></h2>
    <div class="actions">
      <button id="download" type="button">Download CSV</button>
      <button id="reload-accounts" type="button">Reload</button>
      <button id="close-accounts" type="button">Close</button>
    </div>
    <table id="accounts">
      <thead><tr><th scope="col">External account number</th><th scope="col">Status</th><th scope="col">Kraken account</th><th scope="col">Error code</th><th scope="col">Paths</th><th scope="col">Changed</th></tr></thead>
      <tbody></tbody>
    </table>
    <button id="more" type="button" hidden>Load more</button>
  </section>
  <section id="timeline-view" hidden aria-labelledby="timeline-title">
    <h2 id="timeline-title" tabindex="-1"></h2>
    <p id="timeline-why" class="why"></p>
    <div class="actions">
      <button id="close-timeline" type="button">Close</button>
    </div>
    <table id="timeline">
      <thead><tr><th scope="col">At</th><th scope="col">Step</th><th scope="col" class="num">Took</th><th scope="col">What</th></tr></thead>
      <tbody></tbody>
    </table>
    <button id="timeline-more" type="button" hidden>Load more</button>
  </section>
</main>
</body>
</html>
`;

export const cohortsCss = `
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #fff; --focus: #0550ae;
  --PROCESSED: #1a7f37; --IN_PROGRESS: #0969da; --PENDING: #8c959f; --ERRORED: #cf222e;
  --DRY_RUN_SUCCEEDED: #3fb950; --DRY_RUN_ERRORED: #fb8f44; --CANCELLED: #424a53; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 1rem; padding: .5rem 1.25rem; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.25rem; margin: 0; }
header #updated { flex: 1; margin: 0; }
main { padding: .5rem 1.25rem 2rem; max-width: 1600px; }
h2 { font-size: 1.1rem; margin: 1rem 0 .5rem; }
h3 { font-size: 1rem; margin: .25rem 0 .5rem; }
.muted { color: var(--muted); }
.error { color: var(--ERRORED); margin: .25rem 0; }
.error:empty { display: none; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 1rem; top: .5rem; background: #fff; padding: .25rem .5rem; z-index: 1; }
button { font: inherit; padding: .3rem .75rem; border: 1px solid var(--line); border-radius: 6px; background: #f6f8fa; color: var(--fg); cursor: pointer; }
button:hover { background: #eaeef2; }
button[disabled] { opacity: .6; cursor: progress; }
button.link { border: 0; background: none; padding: 0; color: var(--focus); text-decoration: underline; font-weight: 600; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
form { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
input { font: inherit; padding: .3rem .5rem; border: 1px solid var(--muted); border-radius: 6px; min-width: 22rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.barcol { width: 35%; }
tr.selected { background: #f3f8ff; }
.bar { display: flex; height: 1.1rem; border-radius: 4px; overflow: hidden; background: #eaeef2; min-width: 10rem; }
.bar span { display: block; height: 100%; }
.legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; list-style: none; padding: 0; margin: .5rem 0 0; color: var(--muted); }
.legend li::before, .counts li::before { content: ""; display: inline-block; width: .75rem; height: .75rem; margin-right: .3rem; border-radius: 2px; background: var(--c); vertical-align: -1px; }
.counts { display: flex; flex-wrap: wrap; gap: .5rem 1.25rem; list-style: none; padding: 0; margin: 0 0 .5rem; }
.counts button { padding: .1rem .4rem; }
.detail { display: grid; grid-template-columns: minmax(0, 1.2fr) minmax(0, 1fr); gap: 1.5rem; }
.canvas-box { position: relative; height: 240px; }
.actions { display: flex; gap: .5rem; margin-bottom: .5rem; }
td.buttons { white-space: nowrap; }
td.buttons button + button { margin-left: .5rem; }
#more, #timeline-more { margin-top: .5rem; }
.why { font-weight: 600; }
h4 { font-size: .95rem; margin: .25rem 0 .5rem; }
.plan { border: 1px solid var(--line); border-radius: 6px; padding: .25rem .75rem .5rem; margin: 0 0 1rem; }
.plan-grid { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.2fr); gap: 1.5rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0 0 .5rem; }
.facts dt { color: var(--muted); font-weight: 600; }
.facts dd { margin: 0; }
.facts progress { width: 10rem; vertical-align: middle; }
.ok { color: var(--PROCESSED); font-weight: 600; }
.risk { color: var(--ERRORED); font-weight: 600; }
.pause { border-left: 4px solid var(--DRY_RUN_ERRORED); background: #fff8f0; padding: .25rem .75rem .5rem; }
.pause-text { font-weight: 600; }
.pause p { margin: .25rem 0; }
.pause ul { margin: .25rem 0 .5rem; }
@media (max-width: 1000px) { .detail, .plan-grid { grid-template-columns: 1fr; } }
`;
