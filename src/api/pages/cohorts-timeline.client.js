// @ts-check
// One account's timeline (its drill-down link in the accounts list): every step of its migration and why it is
// where it is now, read from GET /v2/data-import/accounts/<code>/<external>/timeline/ with the page's token
// (never in a URL), a page of 100 steps at a time (the page's modules: see cohorts-page.client.js).
import { $, el, messageOf, problem, tbody } from './cohorts-dom.client.js';
import { api } from './cohorts-session.client.js';

/**
 * @typedef {{ id: string, step: string, at: string, duration_ms: number | null, detail: string }} Step
 * @typedef {{ status: string, steps: Step[], next: string | null, truncated: boolean,
 *   why: { code: string, detail: string, since: string | null } }} Timeline
 * @typedef {{ supplier: string, external: string, next: string | null }} Shown
 */

/** @type {Shown | null} */
var shown = null;

/** @param {string} supplier @param {string} external @param {string | null} cursor */
function timelinePath(supplier, external, cursor) {
  return (
    '/v2/data-import/accounts/' +
    encodeURIComponent(supplier) +
    '/' +
    encodeURIComponent(external) +
    '/timeline/' +
    (cursor ? '?cursor=' + encodeURIComponent(cursor) : '')
  );
}

/** The link of an account of the list to its timeline. @param {string} supplier @param {string} external */
export function timelineLink(supplier, external) {
  return el('a', {
    href: '#timeline=' + encodeURIComponent(supplier) + '/' + encodeURIComponent(external),
    'data-timeline': external,
    'aria-label': 'Timeline of ' + external,
    text: external,
  });
}

/** @param {number | null} ms */
function took(ms) {
  if (ms === null) return '—';
  return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s';
}
/** @param {Step} s */
function stepRow(s) {
  return el('tr', { 'data-step': s.id }, [
    el('td', { text: s.at }),
    el('th', { scope: 'row', text: s.step }),
    el('td', { className: 'num', text: took(s.duration_ms) }),
    el('td', { text: s.detail }),
  ]);
}

/** Opens an account's timeline (its first page). @param {string} supplier @param {string} external */
export async function openTimeline(supplier, external) {
  shown = { supplier: supplier, external: external, next: null };
  $('timeline-title').textContent = 'Timeline of ' + external;
  $('timeline-why').textContent = '';
  tbody('timeline').replaceChildren();
  $('timeline-view').hidden = false;
  await loadTimeline(false);
  $('timeline-title').focus();
}

/** @param {boolean} more */
export async function loadTimeline(more) {
  var at = shown;
  if (!at) return;
  try {
    /** @type {Timeline} */
    var page = await api(timelinePath(at.supplier, at.external, more ? at.next : null));
    var rows = page.steps.map(stepRow);
    if (more) tbody('timeline').append.apply(tbody('timeline'), rows);
    else tbody('timeline').replaceChildren.apply(tbody('timeline'), rows);
    $('timeline-why').textContent =
      'Now ' +
      page.status +
      ': ' +
      page.why.detail +
      (page.why.since ? ' (since ' + page.why.since + ')' : '');
    $('timeline-why').setAttribute('data-code', page.why.code);
    at.next = page.next;
    $('timeline-more').hidden = !page.next;
  } catch (e) {
    problem('Could not read the timeline: ' + messageOf(e));
  }
}

/** @param {boolean} focus */
export function closeTimeline(focus) {
  shown = null;
  $('timeline-view').hidden = true;
  if (focus) $('accounts-title').focus();
}
