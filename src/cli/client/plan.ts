import { normaliseIdentifier } from '../../vocabulary/identifiers.js';
import { UsageError, type ApiClient } from './http.js';
import { identifyLine } from './identity.js';
import type { InputLine } from './input.js';

// `migrate` declares the supplier's cohort plan (docs/api.md, "Cohort plan") before it sends its first account:
// the expected accounts from the file, the window, canary and breaker from the flags, or kept from the plan
// declared before (a rerun updates the one plan rather than declaring another).

/** The plan as the service answers it (`GET`/`PUT …/plan/`): the parts the client reads. */
export type PlanBody = {
  import_supplier_code: string;
  expected_accounts: number;
  schedule_window_start: string | null;
  schedule_window_end: string | null;
  canary_accounts: number | null;
  breaker: { error_percent: number; over_accounts: number } | null;
  status: 'ACTIVE' | 'PAUSED';
  pause: { reason: string; detail: string } | null;
  canary_approved: boolean;
  counts: { processed: number; errored: number; in_flight: number };
};

/**
 * The plan flags of `migrate` (commander's names); `undefined`: not given, keep what the plan had; `off`: none
 * (commander turns a parser's null into an empty string, so `off` stays a word until the body is made).
 */
export type PlanFlags = {
  plan: boolean;
  expectedAccounts?: number;
  windowStart?: string;
  windowEnd?: string;
  window: boolean;
  canary?: number | 'off';
  breaker?: { error_percent: number; over_accounts: number } | 'off';
};

/**
 * The first line of the input that names a supplier, read ahead (at most `MAX_PEEK` lines) and handed on: the
 * input is read once (standard input can be read only once).
 */
export async function peekSupplier(
  input: AsyncIterable<InputLine>,
): Promise<{ supplier: string | null; input: AsyncIterable<InputLine> }> {
  const MAX_PEEK = 100;
  const iterator = input[Symbol.asyncIterator]();
  const read: InputLine[] = [];
  let supplier: string | null = null;
  let ended = false;
  while (supplier === null && read.length < MAX_PEEK) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    read.push(next.value);
    const named = next.value.ok ? identifyLine(next.value).import_supplier : null;
    if (named) supplier = normaliseIdentifier(named);
  }
  async function* rest(): AsyncGenerator<InputLine> {
    yield* read;
    if (ended) return;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  return { supplier, input: rest() };
}

export const planPath = (supplier: string) =>
  `/v2/data-import/import-suppliers/${encodeURIComponent(supplier)}/plan/`;

/** How long ago a start may be and still be sent as it is (the service refuses one over 60 s in the past). */
const START_SLACK_MS = 30_000;

/**
 * Declares the supplier's plan: `GET` it, keep its window, canary and breaker unless a flag overrides them,
 * `PUT` it with `expected` accounts. The plan as declared, or null when the service has none to offer (an
 * unknown supplier or a service without plans: a line on stderr, and the run goes on without a plan). A body
 * the service refuses is a usage error naming each field path and code (nothing has been sent yet).
 */
export async function declarePlan(
  api: ApiClient,
  supplier: string,
  expected: number,
  flags: PlanFlags,
): Promise<PlanBody | null> {
  const path = planPath(supplier);
  const got = await api.request('GET', path);
  if (got.status === 404 && codeOf(got.body) === 'import_supplier_not_found') return noPlan(supplier, got);
  if (got.status !== 200 && got.status !== 404) throw refusal(supplier, got);
  const before = got.status === 200 ? (got.body as PlanBody) : null;
  const body = {
    expected_accounts: expected,
    ...windowOf(supplier, before, flags),
    canary_accounts: chosen(flags.canary, before?.canary_accounts ?? null),
    breaker: chosen(flags.breaker, before?.breaker ?? null),
  };
  const put = await api.request('PUT', path, body);
  if (put.status === 404) return noPlan(supplier, put);
  if (put.status !== 200) throw refusal(supplier, put);
  return put.body as PlanBody;
}

/** The window to declare: each bound the flag's, else the one declared before (a start that has passed: now). */
function windowOf(supplier: string, before: PlanBody | null, flags: PlanFlags) {
  if (!flags.window) {
    if (flags.windowStart || flags.windowEnd)
      throw new UsageError('--no-window declares no window: give it without --window-start and --window-end');
    return { schedule_window_start: null, schedule_window_end: null };
  }
  const keptStart = before?.schedule_window_start ?? null;
  const start =
    flags.windowStart ??
    (keptStart && Date.parse(keptStart) > Date.now() - START_SLACK_MS ? keptStart : null);
  const end = flags.windowEnd ?? before?.schedule_window_end ?? null;
  if (!flags.windowEnd && end && Date.parse(end) <= Date.now())
    throw new UsageError(
      `the cohort plan of ${supplier} has a window that ended at ${end}: give a new one (--window-start, --window-end) or --no-window`,
    );
  return { schedule_window_start: start, schedule_window_end: end };
}

/** The plan declared, in one line. */
export function planLine(plan: PlanBody): string {
  const window =
    plan.schedule_window_start || plan.schedule_window_end
      ? `window ${plan.schedule_window_start ?? 'now'} to ${plan.schedule_window_end ?? '-'}`
      : 'no window';
  const canary = plan.canary_accounts
    ? `canary ${plan.canary_accounts}${plan.canary_approved ? ' (approved)' : ''}`
    : 'no canary';
  const breaker = plan.breaker
    ? `breaker ${plan.breaker.error_percent}% over ${plan.breaker.over_accounts}`
    : 'no breaker';
  const pause = plan.pause ? ` (${plan.pause.reason})` : '';
  return `cohort plan of ${plan.import_supplier_code} declared: ${plan.expected_accounts} expected accounts, ${window}, ${canary}, ${breaker}; ${plan.status}${pause}`;
}

/** A setting for the body: the flag's (null for `off`), else the plan's before. */
const chosen = <T>(flag: T | 'off' | undefined, before: T | null): T | null =>
  flag === undefined ? before : flag === 'off' ? null : flag;

const codeOf = (body: unknown) => (body as { code?: string } | null)?.code;

function noPlan(supplier: string, answer: { status: number; body: unknown }): null {
  process.stderr.write(
    `[import-client] no cohort plan declared for ${supplier}: the service answered ${answer.status} ${codeOf(answer.body) ?? ''}\n`,
  );
  return null;
}

/** A refused declaration as one line: every field path with its code. */
function refusal(supplier: string, answer: { status: number; body: unknown }): UsageError {
  const body = (answer.body ?? {}) as { code?: string; errors?: { code: string; attr: string }[] };
  const fields = (body.errors ?? []).map((e) => `${e.attr}: ${e.code}`).join(', ');
  return new UsageError(
    `the cohort plan of ${supplier} was refused (${answer.status} ${body.code ?? ''})${fields ? `: ${fields}` : ''}`,
  );
}
