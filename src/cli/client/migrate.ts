import { AccountLine, type ReadLine } from './account-line.js';
import type { CreateGate } from './create-gate.js';
import type { ApiClient } from './http.js';
import { fieldErrors, type Outcome, type Result } from './outcomes.js';
import { heldByPlan, type PlanHold } from './plan-hold.js';
import type { ResumeState } from './state.js';

export type MigrateOptions = {
  mode: 'v1' | 'v2';
  team: string | null;
  dryRun: boolean;
  /** Aborted when the run gives up the lines in flight (see stop.ts): their waits end, they end `interrupted`. */
  cancelled: AbortSignal;
  /** How long the status of one account is followed before the line ends `failed` (`status_unknown`). */
  pollTimeoutMs: number;
  /** v1: the cohort plan's hold (a paused cohort's accounts wait, and are sent again once it admits them). */
  plan?: PlanHold;
  /** v1: the creates in flight, paced on the organisation's share of the creation limit (see create-gate.ts). */
  creates?: CreateGate;
};

const STAGE = '/v1/data-import/account-import-process/create-or-update/';
const CREATE = '/v1/data-import/account-import-process/process/';
/** Creates answered 503 or "in progress" this many times end the line with that answer. */
const MAX_CREATE_ROUNDS = 10;

const V2_TERMINAL = new Set(['PROCESSED', 'ERRORED', 'CANCELLED', 'DRY_RUN_SUCCEEDED', 'DRY_RUN_ERRORED']);

/** What the error of a v2 task that did not create the account means for the line; any other is `failed`. */
const V2_ERROR_OUTCOMES: Readonly<Record<string, Outcome>> = {
  account_failed_validation: 'validation_failed',
  operations_team_name_does_not_exist: 'validation_failed',
  account_import_process_skipped: 'skipped',
  import_supplier_migration_not_ongoing: 'supplier_closed',
};

type V2Status = {
  status?: string;
  kraken_identifier?: string | null;
  latest_error?: { code: string } | null;
  latest_event?: { data?: { errors?: { code: string; attr: string }[] } } | null;
};

/**
 * One account of `migrate`, line by line in the file's order: a later line of an account an earlier line
 * named is a `duplicate_line` (never sent: which payload is right is for the file's owner to say); an account
 * the state file says is done is skipped; the others are staged then created (v1), or scheduled then followed
 * until their task ends (v2).
 */
export function migrateAccount(api: ApiClient, state: ResumeState, options: MigrateOptions) {
  // The first line of each account in the file (a few dozen bytes an account, as `reconcile` keeps them).
  const firstLines = new Map<string, number>();
  return async (line: ReadLine): Promise<Result> => {
    const account = new AccountLine(line, api, state, options);
    if (account.key) {
      // Decided before the first wait: lines are handed over in the file's order, so the first line wins.
      const first = firstLines.get(account.key);
      if (first !== undefined) return account.duplicateOf(first);
      firstLines.set(account.key, line.line);
      const known = state.decide(account.key);
      if (known.action === 'done')
        return { ...known.result, line: line.line, attempts: 0, ms: 0, done_earlier: true };
    }
    // A held cohort starts no new account (the hold ends `Interrupted` when the run stops or its window ends).
    if (options.mode === 'v1') await options.plan?.ready(account.who.import_supplier);
    return options.mode === 'v2' ? schedule(account, options) : stageAndCreate(account, options);
  };
}

/** v2: the account scheduled, then its task followed until it ends. */
async function schedule(account: AccountLine, options: MigrateOptions): Promise<Result> {
  const { line } = account;
  const payload = ('value' in line ? line.value : JSON.parse(line.text)) as Record<string, unknown>;
  const withTeam =
    options.team && payload.operations_team_name === undefined
      ? { ...payload, operations_team_name: options.team }
      : payload;
  const scheduled = await account.send('POST', '/v2/data-import/accounts/', {
    payload: withTeam,
    task_params: { is_dry_run: options.dryRun },
  });
  if (scheduled.status !== 201) return account.refused(scheduled);
  const path = account.accountPath('/v2/data-import/accounts');
  for (let wait = 500; ; wait = Math.min(wait * 1.5, 5_000)) {
    await account.pause(wait);
    const answer = await account.send('GET', path);
    const body = (answer.body ?? {}) as V2Status;
    if (answer.status === 200 && body.status && V2_TERMINAL.has(body.status)) return taskEnded(account, body);
    if (!account.pollBudgetLeft(answer.status)) return account.statusUnknown(answer.status);
    if (answer.status !== 200 && answer.status !== 404)
      return account.finish({
        outcome: 'failed',
        http_status: answer.status,
        kraken_account_number: null,
        errors: fieldErrors(answer.body),
      });
  }
}

/** A v2 task's final status as the line's result. */
function taskEnded(account: AccountLine, body: V2Status): Result {
  if (body.status === 'PROCESSED') return account.created(200, body.kraken_identifier ?? null);
  if (body.status === 'DRY_RUN_SUCCEEDED')
    return account.finish({
      outcome: 'dry_run_ok',
      http_status: 200,
      kraken_account_number: null,
      errors: [],
    });
  const code = body.latest_error?.code;
  const errors = body.latest_event?.data?.errors ?? (code ? [{ code, attr: 'non_field_errors' }] : []);
  return account.finish({
    outcome: (code && V2_ERROR_OUTCOMES[code]) || 'failed',
    http_status: 200,
    kraken_account_number: null,
    errors,
  });
}

/** v1: the line staged as it is, then created. */
async function stageAndCreate(account: AccountLine, options: MigrateOptions): Promise<Result> {
  const staged = await account.send('POST', STAGE, account.line.text);
  if (staged.status !== 200 && staged.status !== 201) return account.refused(staged);
  const createBody = {
    external_account_number: account.who.external_account_number,
    import_supplier_code: account.who.import_supplier,
    operations_team_name: options.team,
    ...(options.dryRun ? { dry_run: true } : {}),
  };
  for (let round = 1; ; round++) {
    // 503s are handled here, not retried by the client: a pending creation is followed, not sent again.
    const send = () => account.send('POST', CREATE, createBody, false);
    const created = options.creates ? await options.creates.through(send, options.cancelled) : await send();
    if (created.status === 201)
      return account.created(
        201,
        (created.body as { kraken_account_number?: string }).kraken_account_number ?? null,
      );
    // Held by the supplier's cohort plan: not a failure of the account. Sent again once the plan admits it.
    const held = account.who.import_supplier ? heldByPlan(created.status, created.body) : null;
    if (held && options.plan) {
      await options.plan.refused(account.who.import_supplier!, held);
      round--;
      continue;
    }
    const code = (created.body as { code?: string } | null)?.code;
    // Another create of the account runs: most likely this line's own earlier one, whose answer was a 503
    // (a Redis failover interrupted the wait) while its job went on. Followed like a pending one.
    const running = created.status === 400 && code === 'account_import_in_progress';
    if ((created.status === 503 || running) && round >= MAX_CREATE_ROUNDS) return account.refused(created);
    if ((created.status === 503 && code === 'account_creation_pending') || running) {
      const followed = await followCreation(account);
      if (followed) return followed;
      continue;
    }
    if (created.status === 503) {
      await account.pause(2_000);
      continue;
    }
    return account.refused(created);
  }
}

/**
 * A creation that goes on on the server, followed through the v1 status: the line's result, or null when it
 * ended without an account (`UNKNOWN`: the create is sent again).
 */
async function followCreation(account: AccountLine): Promise<Result | null> {
  const path = account.accountPath('/v1/data-import/account-transfer-status');
  for (;;) {
    await account.pause(2_000);
    const answer = await account.send('GET', path);
    const body = (answer.body ?? {}) as { status?: string; kraken_account_number?: string };
    if (body.status === 'COMPLETED') return account.created(201, body.kraken_account_number ?? null);
    if (body.status === 'UNKNOWN') return null;
    if (!account.pollBudgetLeft(answer.status)) return account.statusUnknown(answer.status);
  }
}
