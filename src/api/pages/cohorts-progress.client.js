// @ts-check
// The suppliers and the selected supplier's progress, read every few seconds (the page's modules: see
// cohorts-page.client.js).
import {
  $,
  el,
  lastingProblem,
  messageOf,
  problem,
  replaceKeepingFocus,
  tbody,
} from './cohorts-dom.client.js';
import { closeAccounts, openAccounts } from './cohorts-accounts.client.js';
import { renderPlan } from './cohorts-plan.client.js';
import { api, base, expiry, getToken, supplierPath } from './cohorts-session.client.js';
import { LABELS, STATUSES, changed, color, state } from './cohorts-state.client.js';

/** @import { Accounts, CreationSlots, Minutes, Progress, Shown, Status, SupplierSummary } from './cohorts-state.client.js' */

var REFRESH_MS = 3000;

/** @param {number | null | undefined} seconds */
function eta(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return seconds + ' s';
  if (seconds < 3600) return Math.round(seconds / 60) + ' min';
  return Math.round(seconds / 360) / 10 + ' h';
}
/** @param {Accounts} accounts */
function bar(accounts) {
  var total = accounts.total || 0;
  var parts = STATUSES.filter(function (s) {
    return accounts[s] > 0;
  });
  var label =
    total === 0
      ? 'No accounts yet'
      : parts
          .map(function (s) {
            return LABELS[s] + ' ' + accounts[s];
          })
          .join(', ');
  return el(
    'div',
    { className: 'bar', role: 'img', 'aria-label': label, title: label },
    parts.map(function (s) {
      return el('span', {
        'data-status': s,
        style: 'width:' + (accounts[s] * 100) / total + '%;background:' + color(s),
      });
    }),
  );
}

/**
 * The organisation's creation slots, short ("12 / 25 of 50": in use, its share, the limit).
 * @param {CreationSlots} c
 */
function slotsShort(c) {
  if (c.limit === 0) return c.in_use + ' (no limit)';
  return c.in_use + ' / ' + Math.ceil(c.share) + ' of ' + c.limit;
}

/** @param {SupplierSummary[]} results */
function renderSuppliers(results) {
  if (
    !changed('suppliers', {
      r: results.map(function (r) {
        return [
          r.import_supplier_code,
          r.status,
          r.accounts,
          r.processed_per_minute.last_5m,
          r.eta_seconds,
          r.creation_slots,
        ];
      }),
      s: state.selected,
    })
  )
    return;
  var rows = results.map(function (r) {
    var code = r.import_supplier_code;
    var open = el('button', {
      type: 'button',
      className: 'link',
      text: code,
      'data-key': 'supplier:' + code,
      'aria-label': 'Open ' + code,
      'aria-current': state.selected === code ? 'true' : 'false',
    });
    open.addEventListener('click', function () {
      select(code);
    });
    return el('tr', { className: state.selected === code ? 'selected' : '', 'data-supplier': code }, [
      el('th', { scope: 'row' }, [open]),
      el('td', { text: r.status }),
      el('td', { className: 'num', 'data-field': 'total', text: String(r.accounts.total) }),
      el('td', {}, [bar(r.accounts)]),
      el('td', { className: 'num', 'data-field': 'rate', text: String(r.processed_per_minute.last_5m) }),
      el('td', { className: 'num', 'data-field': 'eta', text: eta(r.eta_seconds) }),
      el('td', {
        className: 'num',
        'data-field': 'slots',
        text: slotsShort(r.creation_slots),
        title: "The organisation's creation slots: in use / its fair share of the limit",
      }),
    ]);
  });
  if (rows.length === 0)
    rows = [
      el('tr', {}, [
        el('td', { colSpan: 7, className: 'muted', text: 'This organisation has no supplier.' }),
      ]),
    ];
  replaceKeepingFocus(tbody('suppliers'), rows);
}

/** @param {string} code */
function select(code) {
  state.selected = code;
  state.shown = {};
  lastingProblem('');
  history.replaceState(null, '', '#supplier=' + encodeURIComponent(code));
  closeAccounts(false);
  refresh().then(function () {
    $('supplier-title').focus();
  });
}

/** @param {Progress} p */
function renderProgress(p) {
  $('supplier-view').hidden = false;
  $('supplier-title').textContent = p.import_supplier_code + ' — ' + p.status;
  var c = p.creation_slots;
  $('slots').textContent =
    c.limit === 0
      ? "Creation slots: the organisation's creations in flight: " + c.in_use + ' (no limit).'
      : "Creation slots: the organisation's creations hold " +
        c.in_use +
        ' of its share of ' +
        Math.ceil(c.share) +
        ' (limit ' +
        c.limit +
        ' for every organisation); ' +
        c.waiting +
        ' waiting for a slot.';
  if (changed('counts', [p.accounts, p.skipped])) {
    var items = /** @type {Shown[]} */ (STATUSES).concat(['SKIPPED']).map(function (s) {
      var n = s === 'SKIPPED' ? p.skipped : p.accounts[s];
      var b = el('button', {
        type: 'button',
        text: LABELS[s] + ' ' + n,
        'data-key': 'count:' + s,
        'data-status': s,
        'aria-label': LABELS[s] + ': ' + n + ' accounts, show them',
      });
      b.addEventListener('click', function () {
        openAccounts(s, null);
      });
      return el('li', { style: '--c:' + (s === 'SKIPPED' ? '#d0d7de' : color(s)) }, [b]);
    });
    items.unshift(el('li', { className: 'total', text: 'Total ' + p.accounts.total }));
    replaceKeepingFocus($('counts'), items);
  }
  // A code groups ERRORED and DRY_RUN_ERRORED accounts: each status that has some gets its button.
  var failing = /** @type {Status[]} */ (['ERRORED', 'DRY_RUN_ERRORED']).filter(function (s) {
    return p.accounts[s] > 0;
  });
  if (changed('failures', [p.failures, failing])) {
    var rows = p.failures.map(function (f) {
      var buttons = failing.map(function (status) {
        var dry = status === 'DRY_RUN_ERRORED';
        var b = el('button', {
          type: 'button',
          text: dry ? 'Dry runs' : 'Show accounts',
          'data-key': 'failure:' + status + ':' + f.code,
          'aria-label': 'Show the ' + (dry ? 'dry runs' : 'accounts') + ' failing with ' + f.code,
        });
        b.addEventListener('click', function () {
          openAccounts(status, f.code);
        });
        return b;
      });
      return el('tr', { 'data-code': f.code }, [
        el('th', { scope: 'row', text: f.code }),
        el('td', { className: 'num', text: String(f.count) }),
        el('td', {
          text:
            f.attrs
              .map(function (a) {
                return a.attr + ' (' + a.count + ')';
              })
              .join(', ') || '—',
        }),
        el('td', { className: 'buttons' }, buttons),
      ]);
    });
    replaceKeepingFocus(tbody('failures'), rows);
    $('failures').hidden = rows.length === 0;
    $('no-failures').hidden = rows.length > 0;
  }
}

/** @param {Minutes} body */
function renderChart(body) {
  /** @param {'processed' | 'errored'} key */
  var sum = function (key) {
    return body.minutes.reduce(function (n, m) {
      return n + m[key];
    }, 0);
  };
  $('chart-summary').textContent =
    'Last hour: ' + sum('processed') + ' processed, ' + sum('errored') + ' errored.';
  if (typeof Chart === 'undefined') return;
  var labels = body.minutes.map(function (m) {
    return new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  });
  var processed = body.minutes.map(function (m) {
    return m.processed;
  });
  var errored = body.minutes.map(function (m) {
    return m.errored;
  });
  if (!state.chart) {
    state.chart = new Chart($('per-minute'), {
      type: 'bar',
      data: {
        labels: labels,
        datasets: [
          { label: 'Processed', data: processed, backgroundColor: '#1a7f37' },
          { label: 'Errored', data: errored, backgroundColor: '#cf222e' },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, ticks: { maxTicksLimit: 12 } },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
        },
        plugins: { legend: { position: 'bottom' } },
      },
    });
    return;
  }
  var datasets = /** @type {[{ data: number[] }, { data: number[] }]} */ (state.chart.data.datasets);
  state.chart.data.labels = labels;
  datasets[0].data = processed;
  datasets[1].data = errored;
  state.chart.update('none');
}

/** Reads the suppliers (and the selected one's progress) and shows them; again in REFRESH_MS while signed in. */
export async function refresh() {
  clearTimeout(state.timer);
  if (!getToken()) return;
  try {
    /** @type {{ results: SupplierSummary[] }} */
    var list = await api(base);
    renderSuppliers(list.results);
    var code = state.selected;
    if (
      code &&
      list.results.some(function (r) {
        return r.import_supplier_code === code;
      })
    ) {
      var both = await Promise.all([
        api(supplierPath(code) + 'progress/'),
        api(supplierPath(code) + 'progress/minutes/'),
      ]);
      // The declared plan (its window's start) only for a supplier that has one.
      var declared = both[0].plan ? await api(supplierPath(code) + 'plan/') : null;
      if (state.selected === code) {
        renderProgress(both[0]);
        renderChart(both[1]);
        renderPlan(both[0], declared, both[1]);
      }
    } else {
      $('supplier-view').hidden = true;
    }
    var until = expiry();
    $('updated').textContent =
      'Updated ' +
      new Date().toLocaleTimeString() +
      ' (every ' +
      REFRESH_MS / 1000 +
      ' s)' +
      (until ? '; signed in until ' + until : '');
    problem('');
  } catch (e) {
    if (!getToken()) return;
    problem('Could not refresh: ' + messageOf(e));
  }
  if (getToken()) state.timer = setTimeout(refresh, REFRESH_MS);
}
