// @ts-check
// The cohort page's DOM helpers (the page's modules: see cohorts-page.client.js).

/**
 * The elements the page uses as more than an HTMLElement, by id.
 * @typedef {{ 'api-key': HTMLInputElement, download: HTMLButtonElement, 'per-minute': HTMLCanvasElement,
 *   suppliers: HTMLTableElement, failures: HTMLTableElement, accounts: HTMLTableElement, timeline: HTMLTableElement,
 *   'plan-resume': HTMLButtonElement, 'plan-chart': HTMLCanvasElement }} Elements
 */

/**
 * The page's element of that id (every id the modules name is in the page's markup).
 * @template {string} K
 * @param {K} id
 * @returns {K extends keyof Elements ? Elements[K] : HTMLElement}
 */
export function $(id) {
  return /** @type {any} */ (document.getElementById(id));
}
/** The body of one of the page's tables. @param {'suppliers' | 'failures' | 'accounts' | 'timeline'} id */
export function tbody(id) {
  return /** @type {HTMLTableSectionElement} */ ($(id).tBodies[0]);
}
/**
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @param {Node[]} [children]
 */
export function el(tag, attrs, children) {
  var node = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) {
    var value = /** @type {Record<string, string | number>} */ (attrs)[k];
    if (k === 'text') node.textContent = /** @type {string} */ (value);
    else if (k === 'style') node.style.cssText = /** @type {string} */ (value);
    else if (
      k.indexOf('data-') === 0 ||
      k.indexOf('aria-') === 0 ||
      ['role', 'scope', 'type', 'title'].indexOf(k) >= 0
    )
      node.setAttribute(k, /** @type {string} */ (value));
    else /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (node))[k] = value;
  });
  (children || []).forEach(function (c) {
    node.append(c);
  });
  return node;
}
/** Whether the problem line holds a message that stays until cleared by lastingProblem (an action's failure). */
var lasting = false;
/** The problem line: a message, or '' to clear it (a lasting message stays). @param {string} [text] */
export function problem(text) {
  if (!text && lasting) return;
  lasting = false;
  $('problem').textContent = text || '';
}
/** A message that the next refresh does not clear ('' clears it). @param {string} text */
export function lastingProblem(text) {
  lasting = text !== '';
  $('problem').textContent = text;
}
/** @param {unknown} e */
export function messageOf(e) {
  return /** @type {Error} */ (e).message;
}

/**
 * Replaces a container's children, keeping the keyboard focus on the element with the same data-key.
 * @param {Element} container
 * @param {Node[]} nodes
 */
export function replaceKeepingFocus(container, nodes) {
  var active = document.activeElement;
  var key = active && container.contains(active) ? active.getAttribute('data-key') : null;
  container.replaceChildren.apply(container, nodes);
  if (key) {
    var again = /** @type {HTMLElement | null} */ (
      container.querySelector('[data-key="' + CSS.escape(key) + '"]')
    );
    if (again) again.focus();
  }
}
