// The cohort page's script (served as /cohorts/cohorts.js); its markup and style are in cohorts-page.ts.

/** The page's script: browser JavaScript (no template literals, so that it can live in this string). */
export const cohortsJs = String.raw`(function () {
  'use strict';
  var TOKEN_KEY = 'cohorts.token';
  var REFRESH_MS = 3000;
  var STATUSES = ['PROCESSED', 'IN_PROGRESS', 'PENDING', 'ERRORED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED', 'CANCELLED'];
  var LABELS = { PROCESSED: 'Processed', IN_PROGRESS: 'In progress', PENDING: 'Pending', ERRORED: 'Errored',
    DRY_RUN_SUCCEEDED: 'Dry run succeeded', DRY_RUN_ERRORED: 'Dry run errored', CANCELLED: 'Cancelled', SKIPPED: 'Skipped' };
  var MUTATION = 'mutation Obtain($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }';
  var state = { selected: null, drill: null, timer: null, chart: null, shown: {} };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'style') node.style.cssText = attrs[k];
      else if (k.indexOf('data-') === 0 || k.indexOf('aria-') === 0 || ['role', 'scope', 'type', 'title'].indexOf(k) >= 0) node.setAttribute(k, attrs[k]);
      else node[k] = attrs[k];
    });
    (children || []).forEach(function (c) { node.append(c); });
    return node;
  }
  function color(status) { return 'var(--' + status + ')'; }
  function getToken() { try { return sessionStorage.getItem(TOKEN_KEY); } catch (e) { return null; } }
  function setToken(t) { try { if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* private mode */ } }
  /** When the token expires (its payload's exp), as a local time; '' when unreadable. */
  function expiry() {
    try {
      var part = getToken().split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      var exp = JSON.parse(atob(part)).exp;
      return new Date(exp * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    } catch (e) { return ''; }
  }
  function problem(text) { $('problem').textContent = text || ''; }

  /** Replaces a container's children, keeping the keyboard focus on the element with the same data-key. */
  function replaceKeepingFocus(container, nodes) {
    var active = document.activeElement;
    var key = active && container.contains(active) ? active.getAttribute('data-key') : null;
    container.replaceChildren.apply(container, nodes);
    if (key) {
      var again = container.querySelector('[data-key="' + CSS.escape(key) + '"]');
      if (again) again.focus();
    }
  }
  /** Runs render only when the data changed since the last time (no flicker, no lost focus). */
  function changed(name, data) {
    var text = JSON.stringify(data);
    if (state.shown[name] === text) return false;
    state.shown[name] = text;
    return true;
  }

  async function api(path) {
    var res = await fetch(path, { headers: { Authorization: 'Token ' + getToken(), Accept: 'application/json' } });
    if (res.status === 401) { signOut('Your session has ended: sign in again.'); throw new Error('signed out'); }
    var body = await res.json().catch(function () { return null; });
    if (!res.ok) throw new Error((body && body.detail) || ('The service answered ' + res.status + '.'));
    return body;
  }
  var base = '/v2/data-import/import-suppliers/';
  function supplierPath(code) { return base + encodeURIComponent(code) + '/'; }

  async function signIn(key) {
    var res = await fetch('/v1/graphql/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ query: MUTATION, variables: { input: { APIKey: key } } })
    });
    var body = await res.json().catch(function () { return null; });
    var token = body && body.data && body.data.obtainKrakenToken && body.data.obtainKrakenToken.token;
    if (!token) throw new Error((body && body.errors && body.errors[0] && body.errors[0].message) || 'Sign-in failed.');
    setToken(token);
  }

  function signOut(message) {
    setToken(null);
    clearTimeout(state.timer);
    state = { selected: null, drill: null, timer: null, chart: state.chart, shown: {} };
    ['suppliers-view', 'supplier-view', 'accounts-view'].forEach(function (id) { $(id).hidden = true; });
    $('sign-out').hidden = true;
    $('sign-in').hidden = false;
    $('updated').textContent = '';
    problem(message || '');
    $('api-key').focus();
  }

  function signedIn() {
    $('sign-in').hidden = true;
    $('sign-out').hidden = false;
    $('suppliers-view').hidden = false;
    problem('');
    var wanted = decodeURIComponent((location.hash.match(/^#supplier=(.+)$/) || [])[1] || '');
    if (wanted) state.selected = wanted;
    refresh();
  }

  function eta(seconds) {
    if (seconds === null || seconds === undefined) return '—';
    if (seconds < 60) return seconds + ' s';
    if (seconds < 3600) return Math.round(seconds / 60) + ' min';
    return (Math.round(seconds / 360) / 10) + ' h';
  }
  function bar(accounts) {
    var total = accounts.total || 0;
    var parts = STATUSES.filter(function (s) { return accounts[s] > 0; });
    var label = total === 0 ? 'No accounts yet' : parts.map(function (s) { return LABELS[s] + ' ' + accounts[s]; }).join(', ');
    return el('div', { className: 'bar', role: 'img', 'aria-label': label, title: label },
      parts.map(function (s) {
        return el('span', { 'data-status': s, style: 'width:' + (accounts[s] * 100 / total) + '%;background:' + color(s) });
      }));
  }

  function renderSuppliers(results) {
    if (!changed('suppliers', { r: results.map(function (r) { return [r.import_supplier_code, r.status, r.accounts, r.processed_per_minute.last_5m, r.eta_seconds]; }), s: state.selected })) return;
    var rows = results.map(function (r) {
      var code = r.import_supplier_code;
      var open = el('button', { type: 'button', className: 'link', text: code, 'data-key': 'supplier:' + code,
        'aria-label': 'Open ' + code, 'aria-current': state.selected === code ? 'true' : 'false' });
      open.addEventListener('click', function () { select(code); });
      return el('tr', { className: state.selected === code ? 'selected' : '', 'data-supplier': code }, [
        el('th', { scope: 'row' }, [open]),
        el('td', { text: r.status }),
        el('td', { className: 'num', 'data-field': 'total', text: String(r.accounts.total) }),
        el('td', {}, [bar(r.accounts)]),
        el('td', { className: 'num', 'data-field': 'rate', text: String(r.processed_per_minute.last_5m) }),
        el('td', { className: 'num', 'data-field': 'eta', text: eta(r.eta_seconds) })
      ]);
    });
    if (rows.length === 0) rows = [el('tr', {}, [el('td', { colSpan: 6, className: 'muted', text: 'This organisation has no supplier.' })])];
    replaceKeepingFocus($('suppliers').tBodies[0], rows);
  }

  function select(code) {
    state.selected = code;
    state.shown = {};
    history.replaceState(null, '', '#supplier=' + encodeURIComponent(code));
    closeAccounts(false);
    refresh().then(function () { $('supplier-title').focus(); });
  }

  function renderProgress(p) {
    $('supplier-view').hidden = false;
    $('supplier-title').textContent = p.import_supplier_code + ' — ' + p.status;
    if (changed('counts', [p.accounts, p.skipped])) {
      var items = STATUSES.concat(['SKIPPED']).map(function (s) {
        var n = s === 'SKIPPED' ? p.skipped : p.accounts[s];
        var b = el('button', { type: 'button', text: LABELS[s] + ' ' + n, 'data-key': 'count:' + s, 'data-status': s,
          'aria-label': LABELS[s] + ': ' + n + ' accounts, show them' });
        b.addEventListener('click', function () { openAccounts(s, null); });
        return el('li', { style: '--c:' + (s === 'SKIPPED' ? '#d0d7de' : color(s)) }, [b]);
      });
      items.unshift(el('li', { className: 'total', text: 'Total ' + p.accounts.total }));
      replaceKeepingFocus($('counts'), items);
    }
    // A code groups ERRORED and DRY_RUN_ERRORED accounts: each status that has some gets its button.
    var failing = ['ERRORED', 'DRY_RUN_ERRORED'].filter(function (s) { return p.accounts[s] > 0; });
    if (changed('failures', [p.failures, failing])) {
      var rows = p.failures.map(function (f) {
        var buttons = failing.map(function (status) {
          var dry = status === 'DRY_RUN_ERRORED';
          var b = el('button', { type: 'button', text: dry ? 'Dry runs' : 'Show accounts',
            'data-key': 'failure:' + status + ':' + f.code,
            'aria-label': 'Show the ' + (dry ? 'dry runs' : 'accounts') + ' failing with ' + f.code });
          b.addEventListener('click', function () { openAccounts(status, f.code); });
          return b;
        });
        return el('tr', { 'data-code': f.code }, [
          el('th', { scope: 'row', text: f.code }),
          el('td', { className: 'num', text: String(f.count) }),
          el('td', { text: f.attrs.map(function (a) { return a.attr + ' (' + a.count + ')'; }).join(', ') || '—' }),
          el('td', { className: 'buttons' }, buttons)
        ]);
      });
      replaceKeepingFocus($('failures').tBodies[0], rows);
      $('failures').hidden = rows.length === 0;
      $('no-failures').hidden = rows.length > 0;
    }
  }

  function renderChart(body) {
    var sum = function (key) { return body.minutes.reduce(function (n, m) { return n + m[key]; }, 0); };
    $('chart-summary').textContent = 'Last hour: ' + sum('processed') + ' processed, ' + sum('errored') + ' errored.';
    if (typeof Chart === 'undefined') return;
    var labels = body.minutes.map(function (m) {
      return new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    });
    var processed = body.minutes.map(function (m) { return m.processed; });
    var errored = body.minutes.map(function (m) { return m.errored; });
    if (!state.chart) {
      state.chart = new Chart($('per-minute'), {
        type: 'bar',
        data: { labels: labels, datasets: [
          { label: 'Processed', data: processed, backgroundColor: '#1a7f37' },
          { label: 'Errored', data: errored, backgroundColor: '#cf222e' }
        ] },
        options: { animation: false, responsive: true, maintainAspectRatio: false,
          scales: { x: { stacked: true, ticks: { maxTicksLimit: 12 } }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
          plugins: { legend: { position: 'bottom' } } }
      });
      return;
    }
    state.chart.data.labels = labels;
    state.chart.data.datasets[0].data = processed;
    state.chart.data.datasets[1].data = errored;
    state.chart.update('none');
  }

  async function refresh() {
    clearTimeout(state.timer);
    if (!getToken()) return;
    try {
      var list = await api(base);
      renderSuppliers(list.results);
      var code = state.selected;
      if (code && list.results.some(function (r) { return r.import_supplier_code === code; })) {
        var both = await Promise.all([api(supplierPath(code) + 'progress/'), api(supplierPath(code) + 'progress/minutes/')]);
        if (state.selected === code) { renderProgress(both[0]); renderChart(both[1]); }
      } else {
        $('supplier-view').hidden = true;
      }
      var until = expiry();
      $('updated').textContent = 'Updated ' + new Date().toLocaleTimeString() + ' (every ' + REFRESH_MS / 1000 + ' s)' +
        (until ? '; signed in until ' + until : '');
      problem('');
    } catch (e) {
      if (!getToken()) return;
      problem('Could not refresh: ' + e.message);
    }
    if (getToken()) state.timer = setTimeout(refresh, REFRESH_MS);
  }

  // The accounts behind a count (a snapshot, paged; "Reload" reads it again).
  function accountsPath(drill, cursor) {
    var q = 'status=' + encodeURIComponent(drill.status) + (drill.code ? '&code=' + encodeURIComponent(drill.code) : '') +
      (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
    return supplierPath(drill.supplier) + 'accounts/?' + q;
  }
  function accountRow(a) {
    return el('tr', { 'data-account': a.external_account_number }, [
      el('th', { scope: 'row', text: a.external_account_number }),
      el('td', { text: a.status }),
      el('td', { text: a.kraken_identifier || '—' }),
      el('td', { text: a.latest_error ? a.latest_error.code : '—' }),
      el('td', { text: a.error_paths.join(', ') || '—' }),
      el('td', { text: a.modified_at })
    ]);
  }
  async function openAccounts(status, code) {
    state.drill = { supplier: state.selected, status: status, code: code, next: null };
    $('accounts-title').textContent = 'Accounts of ' + state.selected + ': ' + LABELS[status] + (code ? ', ' + code : '');
    $('accounts').tBodies[0].replaceChildren();
    $('accounts-view').hidden = false;
    await loadAccounts(false);
    $('accounts-title').focus();
  }
  async function loadAccounts(more) {
    var drill = state.drill;
    if (!drill) return;
    try {
      var page = await api(accountsPath(drill, more ? drill.next : null));
      var rows = page.results.map(accountRow);
      if (more) $('accounts').tBodies[0].append.apply($('accounts').tBodies[0], rows);
      else $('accounts').tBodies[0].replaceChildren.apply($('accounts').tBodies[0], rows.length ? rows : [el('tr', {}, [el('td', { colSpan: 6, className: 'muted', text: 'No accounts.' })])]);
      drill.next = page.next;
      $('more').hidden = !page.next;
    } catch (e) { problem('Could not read the accounts: ' + e.message); }
  }
  function closeAccounts(focus) {
    state.drill = null;
    $('accounts-view').hidden = true;
    if (focus) $('supplier-title').focus();
  }

  /** A CSV cell: quoted when needed (RFC 4180); a leading = + - @ is escaped so a spreadsheet shows it as text. */
  function cell(value) {
    var text = value === null || value === undefined ? '' : String(value);
    if (/^[=+\-@\t\r]/.test(text)) text = "'" + text;
    return /[",\r\n]|^\s|\s$/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  async function download() {
    var drill = state.drill;
    if (!drill) return;
    var button = $('download');
    button.disabled = true;
    button.textContent = 'Preparing…';
    try {
      var lines = [['external_account_number', 'status', 'code', 'paths'].join(',')];
      var cursor = null;
      do {
        var page = await api(accountsPath(drill, cursor));
        page.results.forEach(function (a) {
          lines.push([a.external_account_number, a.status, a.latest_error ? a.latest_error.code : '', a.error_paths.join(';')].map(cell).join(','));
        });
        cursor = page.next;
      } while (cursor);
      var blob = new Blob([lines.join('\r\n') + '\r\n'], { type: 'text/csv;charset=utf-8' });
      var url = URL.createObjectURL(blob);
      var a = el('a', { href: url, download: [drill.supplier, drill.status, drill.code].filter(Boolean).join('-') + '.csv' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
    } catch (e) { problem('Could not download the accounts: ' + e.message); }
    button.disabled = false;
    button.textContent = 'Download CSV';
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('legend').replaceChildren.apply($('legend'), STATUSES.map(function (s) { return el('li', { style: '--c:' + color(s), text: LABELS[s] }); }));
    $('sign-in-form').addEventListener('submit', async function (event) {
      event.preventDefault();
      var input = $('api-key');
      var submit = event.target.querySelector('button');
      submit.disabled = true;
      try {
        await signIn(input.value.trim());
        input.value = '';
        signedIn();
      } catch (e) { problem(e.message); input.focus(); }
      submit.disabled = false;
    });
    $('sign-out').addEventListener('click', function () { signOut('Signed out.'); });
    $('close-accounts').addEventListener('click', function () { closeAccounts(true); });
    $('reload-accounts').addEventListener('click', function () { loadAccounts(false); });
    $('more').addEventListener('click', function () { loadAccounts(true); });
    $('download').addEventListener('click', download);
    document.addEventListener('visibilitychange', function () { if (!document.hidden && getToken()) refresh(); });
    if (getToken()) signedIn(); else signOut('');
  });
})();
`;
