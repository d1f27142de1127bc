// @ts-check
// The selected supplier's cohort plan (issue 47): what it expects and how far it is, its projected finish against
// its window, why it is paused and the button that resumes it, and a chart of planned against actual (the page's
// modules: see cohorts-page.client.js).
import { $, el, lastingProblem, messageOf } from './cohorts-dom.client.js';
import { api, supplierPath } from './cohorts-session.client.js';
import { changed, state } from './cohorts-state.client.js';

/** @import { Minutes, PlanAnswer, PlanProgress, Progress } from './cohorts-state.client.js' */

/** @type {Record<string, string>} */
var BY = { canary: 'the canary', breaker: 'the error-rate breaker', operator: 'an operator' };
/** Whether the chart spans more than a day's hours (its ticks then carry the date). */
var long = false;

/** A time of the API (YYYY-MM-DDTHH:MM:SSZ) as the reader's local date and time, in a <time> element. @param {string} iso */
function timeEl(iso) {
  return el('time', {
    dateTime: iso,
    text: new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }),
  });
}

/** @param {PlanProgress} p @returns {[string, string]} the finish's verdict (its class) and its words */
function verdict(p) {
  if (p.schedule_window_end === null) return ['', 'No window: the plan has no end to finish before.'];
  if (p.finishes_in_window === true)
    return ['ok', 'On time: the projected finish is before the window ends.'];
  if (p.finishes_in_window === false)
    return ['risk', 'At risk: the projected finish is after the window ends.'];
  return ['', 'Not known yet: no projected finish.'];
}

/** @param {string} term @param {string} field @param {(Node | string)[]} content */
function fact(term, field, content) {
  var dd = el('dd', { 'data-field': field });
  dd.append.apply(dd, content);
  return [el('dt', { text: term }), dd];
}

/** @param {PlanProgress} p */
function renderFacts(p) {
  var v = verdict(p);
  var progress = el('progress', {
    max: p.expected_accounts,
    value: Math.min(p.done, p.expected_accounts),
    'aria-label': 'Accounts done: ' + p.percent_done + ' % of those expected',
  });
  var facts = [
    fact('Expected accounts', 'expected', [String(p.expected_accounts)]),
    fact('Done', 'done', [p.done + ' (' + p.percent_done + ' %) ', progress]),
    fact(
      'Projected finish',
      'projected',
      p.projected_finish
        ? [timeEl(p.projected_finish)]
        : ['Not known yet: no account finished in the last 5 minutes.'],
    ),
    fact(
      'Window ends',
      'window-end',
      p.schedule_window_end ? [timeEl(p.schedule_window_end)] : ['No window'],
    ),
    fact('Finish in the window', 'verdict', [el('span', { className: v[0], text: v[1] })]),
    fact('State', 'state', [p.pause ? 'Paused' : 'Running: creations are admitted.']),
  ];
  $('plan-facts').replaceChildren.apply(
    $('plan-facts'),
    facts.reduce(function (all, pair) {
      return all.concat(pair);
    }, /** @type {HTMLElement[]} */ ([])),
  );
}

/** @param {PlanProgress} p */
function renderPause(p) {
  var pause = p.pause;
  $('plan-pause').hidden = !pause;
  if (!pause) return;
  var canary = pause.reason === 'canary';
  var text = 'Paused by ' + (BY[pause.reason] || pause.reason);
  $('plan-pause-text').replaceChildren(text + (pause.since ? ' since ' : '.'));
  if (pause.since) $('plan-pause-text').append(timeEl(pause.since), '.');
  // The API's words: an operator's own reason (or that an operator paused it), or what the gate did.
  var detail = (pause.detail.charAt(0).toUpperCase() + pause.detail.slice(1)).replace(/\.?$/, '.');
  $('plan-pause-detail').textContent = (pause.reason === 'operator' ? 'Why: ' : '') + detail;
  $('plan-codes').replaceChildren.apply(
    $('plan-codes'),
    pause.codes.map(function (c) {
      return el('li', { 'data-code': c.code, text: c.code + ' (' + c.count + ')' });
    }),
  );
  $('plan-codes-title').hidden = pause.codes.length === 0;
  var button = $('plan-resume');
  if (!button.disabled) button.textContent = canary ? 'Approve and resume' : 'Resume';
  button.setAttribute(
    'aria-label',
    canary ? 'Approve the canary accounts and resume the cohort' : 'Resume the cohort',
  );
}

/** @param {number} ms @param {boolean} long */
function tick(ms, long) {
  var d = new Date(ms);
  return long
    ? d.toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
    : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

/**
 * The chart's lines from what the API gives: the accounts done over the last hour (the done count now, less the
 * accounts finished in each later minute), the plan (from the window's start, 0, to its end, every expected
 * account: only with a window) and the projection (from now to the projected finish).
 * @param {PlanProgress} p @param {PlanAnswer | null} declared @param {Minutes} body
 */
export function planLines(p, declared, body) {
  var asOf = Date.parse(body.as_of);
  var later = 0;
  /** @type {{ x: number, y: number }[]} */
  var actual = [{ x: asOf, y: p.done }];
  for (var i = body.minutes.length - 1; i >= 0; i--) {
    var m = /** @type {Minutes['minutes'][number]} */ (body.minutes[i]);
    later += m.processed + m.errored;
    actual.unshift({ x: Date.parse(m.minute), y: Math.max(0, p.done - later) });
  }
  var start = declared && declared.schedule_window_start;
  var planned =
    start && p.schedule_window_end
      ? [
          { x: Date.parse(start), y: 0 },
          { x: Date.parse(p.schedule_window_end), y: p.expected_accounts },
        ]
      : [];
  var projected = p.projected_finish
    ? [
        { x: asOf, y: p.done },
        { x: Date.parse(p.projected_finish), y: p.expected_accounts },
      ]
    : [];
  return { actual: actual, planned: planned, projected: projected };
}

/** @param {PlanProgress} p @param {PlanAnswer | null} declared @param {Minutes} body */
function renderChart(p, declared, body) {
  var lines = planLines(p, declared, body);
  var first = /** @type {{ x: number, y: number }} */ (lines.actual[0]);
  $('plan-chart-summary').textContent =
    'Done: ' +
    p.done +
    ' of ' +
    p.expected_accounts +
    ' now, ' +
    first.y +
    ' an hour ago. ' +
    (lines.planned.length
      ? 'Planned: all ' + p.expected_accounts + ' by the window’s end. '
      : 'No window: no planned line. ') +
    (lines.projected.length
      ? 'Projected: all by ' + tick(Date.parse(/** @type {string} */ (p.projected_finish)), true) + '.'
      : 'No projection yet.');
  if (typeof Chart === 'undefined') return;
  var xs = lines.actual.concat(lines.planned, lines.projected).map(function (pt) {
    return pt.x;
  });
  long = Math.max.apply(null, xs) - Math.min.apply(null, xs) > 20 * 3600 * 1000;
  var datasets = [
    { label: 'Done (actual)', data: lines.actual, borderColor: '#0969da', backgroundColor: '#0969da' },
    {
      label: 'Planned (window)',
      data: lines.planned,
      borderColor: '#57606a',
      backgroundColor: '#57606a',
      borderDash: [6, 4],
    },
    {
      label: 'Projected',
      data: lines.projected,
      borderColor: '#8250df',
      backgroundColor: '#8250df',
      borderDash: [2, 3],
    },
  ];
  if (state.planChart) {
    state.planChart.data.datasets.forEach(function (d, i) {
      d.data = /** @type {typeof datasets[number]} */ (datasets[i]).data;
    });
    state.planChart.update('none');
    return;
  }
  state.planChart = new Chart($('plan-chart'), {
    type: 'line',
    data: { datasets: datasets },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      parsing: false,
      elements: { point: { radius: 0, hitRadius: 6 } },
      scales: {
        x: {
          type: 'linear',
          ticks: {
            maxTicksLimit: 8,
            callback: function (value) {
              return tick(Number(value), long);
            },
          },
        },
        y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: 'Accounts done' } },
      },
      plugins: {
        // A line not drawn (no window, no projection) has no entry.
        legend: {
          position: 'bottom',
          labels: {
            filter: function (item, data) {
              var set = data.datasets[item.datasetIndex ?? 0];
              return !!set && set.data.length > 0;
            },
          },
        },
        tooltip: {
          callbacks: {
            title: function (items) {
              return items[0] ? tick(items[0].parsed.x ?? 0, true) : '';
            },
          },
        },
      },
    },
  });
}

/**
 * Shows the plan of the progress body (hidden without one), `declared` being the supplier's GET …/plan/ answer.
 * @param {Progress} progress @param {PlanAnswer | null} declared @param {Minutes} minutes
 */
export function renderPlan(progress, declared, minutes) {
  var p = progress.plan;
  $('plan-view').hidden = !p;
  if (!p) return;
  if (changed('plan', p)) {
    renderFacts(p);
    renderPause(p);
  }
  renderChart(p, declared, minutes);
}

/**
 * Approves the canary or resumes the cohort (POST …/plan/resume/), then reads the progress again (`refresh`).
 * @param {() => Promise<void>} refresh
 */
export async function resume(refresh) {
  var code = state.selected;
  var button = $('plan-resume');
  if (!code || button.disabled) return;
  button.disabled = true;
  var label = button.textContent;
  button.textContent = 'Resuming…';
  try {
    await api(supplierPath(code) + 'plan/resume/', {});
    lastingProblem('');
    button.disabled = false;
    button.textContent = label;
    await refresh();
    $('plan-title').focus();
  } catch (e) {
    button.disabled = false;
    button.textContent = label;
    lastingProblem('Could not resume the cohort: ' + messageOf(e));
  }
}
