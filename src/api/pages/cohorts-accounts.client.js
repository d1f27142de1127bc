// @ts-check
// The accounts behind a count (a snapshot, paged; "Reload" reads it again), and their CSV (the page's modules: see
// cohorts-page.client.js).
import { $, el, messageOf, problem, tbody } from './cohorts-dom.client.js';
import { api, supplierPath } from './cohorts-session.client.js';
import { LABELS, state } from './cohorts-state.client.js';
import { timelineLink } from './cohorts-timeline.client.js';

/** @import { Account, AccountsPage, Drill, Shown } from './cohorts-state.client.js' */

/** @param {Drill} drill @param {string | null} cursor */
function accountsPath(drill, cursor) {
  var q =
    'status=' +
    encodeURIComponent(drill.status) +
    (drill.code ? '&code=' + encodeURIComponent(drill.code) : '') +
    (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
  return supplierPath(drill.supplier) + 'accounts/?' + q;
}
/** An account of the list, its number a link to its timeline. @param {string} supplier @param {Account} a */
function accountRow(supplier, a) {
  return el('tr', { 'data-account': a.external_account_number }, [
    el('th', { scope: 'row' }, [timelineLink(supplier, a.external_account_number)]),
    el('td', { text: a.status }),
    el('td', { text: a.kraken_identifier || '—' }),
    el('td', { text: a.latest_error ? a.latest_error.code : '—' }),
    el('td', { text: a.error_paths.join(', ') || '—' }),
    el('td', { text: a.modified_at }),
  ]);
}
/** @param {Shown} status @param {string | null} code */
export async function openAccounts(status, code) {
  // Only the counts of the selected supplier offer their accounts.
  state.drill = { supplier: /** @type {string} */ (state.selected), status: status, code: code, next: null };
  $('accounts-title').textContent =
    'Accounts of ' + state.selected + ': ' + LABELS[status] + (code ? ', ' + code : '');
  tbody('accounts').replaceChildren();
  $('accounts-view').hidden = false;
  await loadAccounts(false);
  $('accounts-title').focus();
}
/** @param {boolean} more */
export async function loadAccounts(more) {
  var drill = state.drill;
  if (!drill) return;
  try {
    /** @type {AccountsPage} */
    var page = await api(accountsPath(drill, more ? drill.next : null));
    var supplier = drill.supplier;
    var rows = page.results.map(function (a) {
      return accountRow(supplier, a);
    });
    if (more) tbody('accounts').append.apply(tbody('accounts'), rows);
    else
      tbody('accounts').replaceChildren.apply(
        tbody('accounts'),
        rows.length
          ? rows
          : [el('tr', {}, [el('td', { colSpan: 6, className: 'muted', text: 'No accounts.' })])],
      );
    drill.next = page.next;
    $('more').hidden = !page.next;
  } catch (e) {
    problem('Could not read the accounts: ' + messageOf(e));
  }
}
/** @param {boolean} focus */
export function closeAccounts(focus) {
  state.drill = null;
  $('accounts-view').hidden = true;
  if (focus) $('supplier-title').focus();
}

/**
 * A CSV cell: quoted when needed (RFC 4180); a leading = + - @ is escaped so a spreadsheet shows it as text.
 * @param {string | null | undefined} value
 */
function cell(value) {
  var text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = "'" + text;
  return /[",\r\n]|^\s|\s$/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
}
export async function download() {
  var drill = state.drill;
  if (!drill) return;
  var button = $('download');
  button.disabled = true;
  button.textContent = 'Preparing…';
  try {
    var lines = [['external_account_number', 'status', 'code', 'paths'].join(',')];
    /** @type {string | null} */
    var cursor = null;
    do {
      /** @type {AccountsPage} */
      var page = await api(accountsPath(drill, cursor));
      page.results.forEach(function (a) {
        lines.push(
          [
            a.external_account_number,
            a.status,
            a.latest_error ? a.latest_error.code : '',
            a.error_paths.join(';'),
          ]
            .map(cell)
            .join(','),
        );
      });
      cursor = page.next;
    } while (cursor);
    var blob = new Blob([lines.join('\r\n') + '\r\n'], { type: 'text/csv;charset=utf-8' });
    var url = URL.createObjectURL(blob);
    var a = el('a', {
      href: url,
      download: [drill.supplier, drill.status, drill.code].filter(Boolean).join('-') + '.csv',
    });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 60000);
  } catch (e) {
    problem('Could not download the accounts: ' + messageOf(e));
  }
  button.disabled = false;
  button.textContent = 'Download CSV';
}
