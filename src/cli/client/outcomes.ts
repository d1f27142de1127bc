import type { Difference } from '../../domain/reconciliation/compare.js';

/**
 * How an input line of `validate`, `migrate` or `post-import` ended (the `outcome` of `results.jsonl`; see
 * docs/client.md, "Outcomes"). `duplicate_line` (`migrate`): a later line of an account an earlier line of the
 * file named, not sent. `interrupted`: the run stopped (a signal, the key refused) before the line finished.
 */
export const outcomes = [
  'created',
  'already_imported',
  'validation_failed',
  'dry_run_ok',
  'skipped',
  'supplier_closed',
  'failed',
  'parse_error',
  'duplicate_line',
  'interrupted',
] as const;

/**
 * How an account of `reconcile` ended: `matched`, `mismatched` (with its differences), `not_created` (the
 * service has no created account), `duplicate` (a later line of an account the file already named), `failed`,
 * `parse_error`. See docs/client.md, "Reconciling a cohort".
 */
export const reconcileOutcomes = [
  'matched',
  'mismatched',
  'not_created',
  'duplicate',
  'failed',
  'parse_error',
] as const;

export type Outcome = (typeof outcomes)[number] | (typeof reconcileOutcomes)[number];

/** Outcomes of lines that were not an account sent: left out of the accounts per second. */
export const notAccounts: ReadonlySet<Outcome> = new Set(['parse_error', 'duplicate_line']);

/** The outcomes that count as success for the exit code. */
export const successes: ReadonlySet<Outcome> = new Set([
  'created',
  'already_imported',
  'dry_run_ok',
  'matched',
]);

export type FieldError = { code: string; attr: string };

export type Result = {
  line: number;
  import_supplier: string | null;
  external_account_number: string | null;
  outcome: Outcome;
  http_status: number | null;
  kraken_account_number: string | null;
  errors: FieldError[];
  attempts: number;
  ms: number;
  /** `reconcile` only: what differs between the expected figures and the service's (`mismatched`). */
  differences?: Difference[];
  /** `reconcile` only: the sum of |expected − actual| over the account's balances, exact ("12.30"). */
  money_difference?: string;
  /**
   * `migrate` only: the line was not sent, the state says an earlier run on it ended with `outcome` (created or
   * already imported). Absent on lines this run handled.
   */
  done_earlier?: true;
};

type ErrorBody = {
  code?: string;
  errors?: { code: string; attr: string }[];
  kraken_account_number?: string;
  account_id?: string;
  non_field_errors?: { code?: string };
};

/** The codes and paths of an error body (never its details, which may quote values). */
export function fieldErrors(body: unknown): FieldError[] {
  const b = (body ?? {}) as ErrorBody;
  const errors = (b.errors ?? []).map(({ code, attr }) => ({ code, attr }));
  if (errors.length > 0) return errors;
  const code = b.code ?? b.non_field_errors?.code;
  return code ? [{ code, attr: 'non_field_errors' }] : [];
}

/**
 * What a refusal means for the account: the documented codes of stage, create and schedule. Anything not
 * listed is `failed` (the run goes on; a rerun tries it again).
 */
export function refusalOutcome(status: number, body: unknown): { outcome: Outcome; kraken: string | null } {
  const b = (body ?? {}) as ErrorBody;
  const code = b.code ?? b.non_field_errors?.code;
  switch (code) {
    case 'account_failed_validation':
    case 'import_process_failed_validation':
    case 'request_failed_validation':
    case 'operations_team_should_be_provided':
    case 'operations_team_name_does_not_exist':
      return { outcome: 'validation_failed', kraken: null };
    case 'account_import_process_already_imported':
      return { outcome: 'already_imported', kraken: b.kraken_account_number ?? b.account_id ?? null };
    case 'account_import_process_skipped':
      return { outcome: 'skipped', kraken: null };
    case 'import_supplier_migration_not_ongoing':
      return { outcome: 'supplier_closed', kraken: null };
    case 'dry_run_rolled_back':
      return { outcome: 'dry_run_ok', kraken: null };
    // `migrate` sends lines unparsed: the server's verdict on one that is not JSON.
    case 'parse_error':
      return { outcome: 'parse_error', kraken: null };
    default:
      return { outcome: status === 400 && code === undefined ? 'validation_failed' : 'failed', kraken: null };
  }
}
