// @ts-check
// What the cohort page shows and remembers: the answers of the v2 progress endpoints it reads (their types), the
// statuses it counts, and its state (the page's modules: see cohorts-page.client.js).

/**
 * @typedef {'PROCESSED' | 'IN_PROGRESS' | 'PENDING' | 'ERRORED' | 'DRY_RUN_SUCCEEDED' | 'DRY_RUN_ERRORED' | 'CANCELLED'} Status
 * @typedef {Status | 'SKIPPED'} Shown a status whose accounts the page lists
 * @typedef {Record<Status, number> & { total: number }} Accounts
 * @typedef {{ in_use: number, share: number, limit: number, waiting: number }} CreationSlots
 * @typedef {{ import_supplier_code: string, status: string, accounts: Accounts,
 *   processed_per_minute: { last_5m: number }, eta_seconds: number | null,
 *   creation_slots: CreationSlots }} SupplierSummary
 * @typedef {{ code: string, count: number, attrs: { attr: string, count: number }[] }} Failure
 * @typedef {{ reason: 'canary' | 'breaker' | 'operator', detail: string, since: string | null,
 *   codes: { code: string, count: number }[] }} Pause
 * @typedef {{ expected_accounts: number, done: number, percent_done: number, projected_finish: string | null,
 *   schedule_window_end: string | null, finishes_in_window: boolean | null, pause: Pause | null }} PlanProgress
 * @typedef {{ expected_accounts: number, schedule_window_start: string | null, schedule_window_end: string | null,
 *   status: 'ACTIVE' | 'PAUSED', pause: Pause | null }} PlanAnswer the parts of GET …/plan/ the page reads
 * @typedef {{ import_supplier_code: string, status: string, accounts: Accounts, skipped: number,
 *   failures: Failure[], creation_slots: CreationSlots, plan: PlanProgress | null }} Progress
 * @typedef {{ as_of: string, minutes: { minute: string, processed: number, errored: number }[] }} Minutes
 * @typedef {{ external_account_number: string, status: string, kraken_identifier: string | null,
 *   latest_error: { code: string } | null, error_paths: string[], modified_at: string }} Account
 * @typedef {{ results: Account[], next: string | null }} AccountsPage
 * @typedef {{ supplier: string, status: Shown, code: string | null, next: string | null }} Drill
 * @typedef {import('chart.js').Chart<'bar', number[], string>} BarChart
 * @typedef {import('chart.js').Chart<'line', { x: number, y: number }[]>} LineChart
 * @typedef {{ selected: string | null, drill: Drill | null, timer: ReturnType<typeof setTimeout> | undefined,
 *   chart: BarChart | null, planChart: LineChart | null, shown: Record<string, string> }} State
 */

/** @type {Status[]} */
export var STATUSES = [
  'PROCESSED',
  'IN_PROGRESS',
  'PENDING',
  'ERRORED',
  'DRY_RUN_SUCCEEDED',
  'DRY_RUN_ERRORED',
  'CANCELLED',
];
/** @type {Record<Shown, string>} */
export var LABELS = {
  PROCESSED: 'Processed',
  IN_PROGRESS: 'In progress',
  PENDING: 'Pending',
  ERRORED: 'Errored',
  DRY_RUN_SUCCEEDED: 'Dry run succeeded',
  DRY_RUN_ERRORED: 'Dry run errored',
  CANCELLED: 'Cancelled',
  SKIPPED: 'Skipped',
};
/** @param {Shown} status */
export function color(status) {
  return 'var(--' + status + ')';
}

/** @type {State} */
export var state = { selected: null, drill: null, timer: undefined, chart: null, planChart: null, shown: {} };
/** Forgets everything but the charts (at sign-out). */
export function resetState() {
  state = {
    selected: null,
    drill: null,
    timer: undefined,
    chart: state.chart,
    planChart: state.planChart,
    shown: {},
  };
}
/**
 * Runs render only when the data changed since the last time (no flicker, no lost focus).
 * @param {string} name
 * @param {unknown} data
 */
export function changed(name, data) {
  var text = JSON.stringify(data);
  if (state.shown[name] === text) return false;
  state.shown[name] = text;
  return true;
}
