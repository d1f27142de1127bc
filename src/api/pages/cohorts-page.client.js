// @ts-check
// The cohort page's script: ES modules of plain browser JavaScript, served as they are under /cohorts/ (their
// markup and style: cohorts-page.ts), type-checked by tsc (// @ts-check and their JSDoc types) and linted. This
// one, the page's entry, signs in and out and wires the controls; cohorts-progress.client.js reads and shows the
// progress, cohorts-plan.client.js the cohort plan (and its resume), cohorts-accounts.client.js the accounts
// behind a count, cohorts-timeline.client.js one account's timeline, cohorts-session.client.js holds the token and makes the requests, cohorts-state.client.js what
// the page shows and remembers, cohorts-dom.client.js the DOM helpers.
import { $, el, messageOf, problem } from './cohorts-dom.client.js';
import { closeAccounts, download, loadAccounts } from './cohorts-accounts.client.js';
import { resume } from './cohorts-plan.client.js';
import { closeTimeline, loadTimeline, openTimeline } from './cohorts-timeline.client.js';
import { refresh } from './cohorts-progress.client.js';
import { getToken, signIn, signOut } from './cohorts-session.client.js';
import { LABELS, STATUSES, color, state } from './cohorts-state.client.js';

function signedIn() {
  $('sign-in').hidden = true;
  $('sign-out').hidden = false;
  $('suppliers-view').hidden = false;
  problem('');
  var wanted = decodeURIComponent((location.hash.match(/^#supplier=(.+)$/) || [])[1] || '');
  if (wanted) state.selected = wanted;
  refresh();
}

document.addEventListener('DOMContentLoaded', function () {
  $('legend').replaceChildren.apply(
    $('legend'),
    STATUSES.map(function (s) {
      return el('li', { style: '--c:' + color(s), text: LABELS[s] });
    }),
  );
  $('sign-in-form').addEventListener('submit', async function (event) {
    event.preventDefault();
    var input = $('api-key');
    var submit = /** @type {HTMLButtonElement} */ (
      /** @type {HTMLFormElement} */ (event.target).querySelector('button')
    );
    submit.disabled = true;
    try {
      await signIn(input.value.trim());
      input.value = '';
      signedIn();
    } catch (e) {
      problem(messageOf(e));
      input.focus();
    }
    submit.disabled = false;
  });
  $('sign-out').addEventListener('click', function () {
    signOut('Signed out.');
  });
  $('close-accounts').addEventListener('click', function () {
    closeAccounts(true);
  });
  $('reload-accounts').addEventListener('click', function () {
    loadAccounts(false);
  });
  $('more').addEventListener('click', function () {
    loadAccounts(true);
  });
  $('download').addEventListener('click', download);
  // An account's number in the list links to its timeline, read with the page's token.
  $('accounts').addEventListener('click', function (event) {
    var link = /** @type {Element} */ (event.target).closest('a[data-timeline]');
    if (!link || !state.drill) return;
    event.preventDefault();
    openTimeline(state.drill.supplier, /** @type {string} */ (link.getAttribute('data-timeline')));
  });
  $('close-timeline').addEventListener('click', function () {
    closeTimeline(true);
  });
  $('timeline-more').addEventListener('click', function () {
    loadTimeline(true);
  });
  $('plan-resume').addEventListener('click', function () {
    resume(refresh);
  });
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && getToken()) refresh();
  });
  if (getToken()) signedIn();
  else signOut('');
});
