/**
 * The one catalogue of error codes the API answers with. Routes throw `ApiError(code, ...)`; the error
 * handler in app.ts turns it into the documented body. `docs/error-codes.md` lists these too.
 */
export const errorCatalogue = {
  parse_error: { status: 400, detail: 'Malformed JSON in the request body.' },
  account_failed_validation: { status: 400, detail: 'The account data failed validation.' },
  request_failed_validation: { status: 400, detail: 'The request failed validation.' },
  import_supplier_migration_not_ongoing: {
    status: 400,
    detail: 'The import supplier is not accepting migrations.',
  },
  account_import_process_already_imported: { status: 400, detail: 'The account has already been imported.' },
  account_import_process_skipped: {
    status: 400,
    detail: 'The account import process is marked to be skipped.',
  },
  import_process_does_not_exist: { status: 400, detail: 'No staged data exists for this account.' },
  operations_team_name_does_not_exist: { status: 400, detail: 'The operations team does not exist.' },
  account_import_in_progress: { status: 400, detail: 'The account is already being created.' },
  dry_run_rolled_back: {
    status: 400,
    detail: 'Account would import successfully. Rolled back due to dry run.',
  },
  import_process_failed_validation: { status: 400, detail: 'The import process failed validation.' },
  operations_team_should_be_provided: {
    status: 400,
    detail: 'Name an operations team in the payload, or set a default team for the import supplier.',
  },
  import_process_not_cancellable: {
    status: 400,
    detail: 'Only a scheduled task that has not started can be cancelled.',
  },
  ledger_not_found: { status: 400, detail: 'The ledger does not exist on the account.' },
  ledger_has_finalized_billing_document: {
    status: 400,
    detail: 'The ledger already has a finalized billing document.',
  },
  historical_statement_already_exists: {
    status: 400,
    detail: 'A statement with this statement_id already exists.',
  },
  vendor_instruction_not_found: {
    status: 400,
    detail: 'The payment vendor has no usable instruction with this reference.',
  },
  account_has_active_payment_instruction: {
    status: 400,
    detail: 'The account already has an active payment instruction.',
  },
  too_many_items: {
    status: 400,
    detail: 'The request names more items than one request may carry; split it.',
  },
  not_authenticated: {
    status: 401,
    detail: 'Authentication credentials were not provided or are malformed.',
  },
  token_expired: { status: 401, detail: 'The token has expired.' },
  invalid_token: { status: 401, detail: 'The token is invalid or has been revoked.' },
  not_found: { status: 404, detail: 'Not found.' },
  import_supplier_not_found: { status: 404, detail: 'Import supplier not found.' },
  import_process_not_found: { status: 404, detail: 'No import process found for this account.' },
  account_not_found: { status: 404, detail: 'Account not found. It must be imported, not only staged.' },
  method_not_allowed: { status: 405, detail: 'Method not allowed.' },
  payload_too_large: { status: 413, detail: 'The request body is too large.' },
  unsupported_media_type: { status: 415, detail: 'Send the body as application/json.' },
  concurrency_limit_exceeded: {
    status: 429,
    detail: 'Too many accounts are being created at once. Retry after others finish.',
  },
  internal_error: { status: 500, detail: 'Internal error' },
  vendor_unavailable: { status: 500, detail: 'The payment vendor could not be reached. Retry unchanged.' },
  service_unavailable: { status: 503, detail: 'A backing service is unavailable. Retry shortly.' },
  account_creation_pending: {
    status: 503,
    detail: 'Account creation is still running. Check its status or retry later.',
  },
} as const satisfies Record<string, { status: number; detail: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** `Retry-After` (seconds) of a 503 `service_unavailable`: a backing service (database, Redis) is down. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER = '5';

export type FieldError = { detail: string; code: string; attr: string };

export type ApiErrorOptions = {
  detail?: string;
  errors?: FieldError[];
  /** Extra top-level body fields, e.g. account numbers on "already imported". */
  fields?: Record<string, unknown>;
  headers?: Record<string, string>;
};

export class ApiError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ErrorCode,
    readonly options: ApiErrorOptions = {},
  ) {
    super(options.detail ?? errorCatalogue[code].detail);
    this.name = 'ApiError';
    this.statusCode = errorCatalogue[code].status;
  }

  body(): Record<string, unknown> {
    const base: Record<string, unknown> = { detail: this.message, code: this.code };
    if (this.statusCode === 400) base.errors = this.options.errors ?? [];
    return { ...base, ...this.options.fields };
  }
}

/**
 * Field-level codes that come from checks against stored data or the clock (the rest come from the
 * validators): the caller's suppliers and teams, the account's ledgers, transactions and billing import, v2 task
 * windows.
 */
export const storedDataFieldCodes = [
  {
    code: 'import_supplier_not_found',
    description: 'The caller has no import supplier with this code.',
    exampleAttr: 'import_supplier',
  },
  {
    code: 'ledger_not_found',
    description: 'The account has no ledger with this code.',
    exampleAttr: 'ledger_code',
  },
  {
    code: 'transaction_already_exists',
    description: 'A transaction with this id is already on the account.',
    exampleAttr: 'historical_billing_documents.0.transactions.0.transaction_id',
  },
  {
    code: 'billing_documents_already_imported',
    description:
      'The ledger already holds this same import (the request sent again); with ledger_has_finalized_billing_document.',
    exampleAttr: 'ledger_code',
  },
  {
    code: 'schedule_window_start_in_past',
    description: 'v2: the task window starts more than 60 seconds in the past.',
    exampleAttr: 'task_params.schedule_window_start',
  },
  {
    code: 'schedule_window_end_too_far_in_future',
    description: 'v2: the task window ends more than four days from now.',
    exampleAttr: 'task_params.schedule_window_end',
  },
  {
    code: 'schedule_window_start__after_end',
    description: 'v2: the task window does not end after it starts.',
    exampleAttr: 'task_params.schedule_window_end',
  },
  {
    code: 'operations_team_should_be_provided',
    description: 'v2: no team in the payload and no default team for the import supplier.',
    exampleAttr: 'operations_team_name',
  },
  {
    code: 'operations_team_name_does_not_exist',
    description: 'v2: the payload names a team that does not exist.',
    exampleAttr: 'operations_team_name',
  },
] as const;
