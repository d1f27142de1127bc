// @ts-check
// The cohort page's session: the token (obtained with the API key, kept in the tab's session storage) and the
// requests made with it (the page's modules: see cohorts-page.client.js).
import { $, lastingProblem, problem } from './cohorts-dom.client.js';
import { resetState, state } from './cohorts-state.client.js';

var TOKEN_KEY = 'cohorts.token';
var MUTATION =
  'mutation Obtain($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token } }';

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}
/** @param {string | null} t */
function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* private mode */
  }
}
/** When the token expires (its payload's exp), as a local time; '' when unreadable. */
export function expiry() {
  try {
    var part = /** @type {string} */ (/** @type {string} */ (getToken()).split('.')[1])
      .replace(/-/g, '+')
      .replace(/_/g, '/');
    var exp = JSON.parse(atob(part)).exp;
    return new Date(exp * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  } catch {
    return '';
  }
}

/**
 * A GET of the path, or a POST of `body` (JSON) when given.
 * @param {string} path @param {object} [body] @returns {Promise<any>} the answer's body, of the type the path answers
 */
export async function api(path, body) {
  /** @type {Record<string, string>} */
  var headers = { Authorization: 'Token ' + getToken(), Accept: 'application/json' };
  if (body) headers['Content-Type'] = 'application/json';
  var res = await fetch(
    path,
    body ? { method: 'POST', headers: headers, body: JSON.stringify(body) } : { headers: headers },
  );
  if (res.status === 401) {
    signOut('Your session has ended: sign in again.');
    throw new Error('signed out');
  }
  var answer = await res.json().catch(function () {
    return null;
  });
  if (!res.ok) throw new Error((answer && answer.detail) || 'The service answered ' + res.status + '.');
  return answer;
}
export var base = '/v2/data-import/import-suppliers/';
/** @param {string} code */
export function supplierPath(code) {
  return base + encodeURIComponent(code) + '/';
}

/** @param {string} key */
export async function signIn(key) {
  var res = await fetch('/v1/graphql/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ query: MUTATION, variables: { input: { APIKey: key } } }),
  });
  var body = await res.json().catch(function () {
    return null;
  });
  var token = body && body.data && body.data.obtainKrakenToken && body.data.obtainKrakenToken.token;
  if (!token)
    throw new Error((body && body.errors && body.errors[0] && body.errors[0].message) || 'Sign-in failed.');
  setToken(token);
}

/** @param {string} [message] */
export function signOut(message) {
  setToken(null);
  clearTimeout(state.timer);
  resetState();
  ['suppliers-view', 'supplier-view', 'accounts-view', 'timeline-view'].forEach(function (id) {
    $(id).hidden = true;
  });
  $('sign-out').hidden = true;
  $('sign-in').hidden = false;
  $('updated').textContent = '';
  lastingProblem('');
  problem(message || '');
  $('api-key').focus();
}
