import type { Answer } from './http.js';
import { identify } from './identity.js';
import { fieldErrors, type FieldError, type Outcome, type Result } from './outcomes.js';

// The result of a line of `validate` or `post-import` sent as one request, from the service's answer.

export const postImportPaths = {
  notes: '/v1/data-import/notes/create/',
  transactions: '/v1/data-import/transactions/create/',
  'billing-documents': '/v1/data-import/historical-billing-documents/create/',
  statements: '/v1/data-import/historical-statements/create/',
  'payment-instructions': '/v1/data-import/payment-instruction/create/',
} as const;

export type PostImportKind = keyof typeof postImportPaths;

/** A line sent as one request: `success` on a 2xx, `validation_failed` on a 400, else `failed`. */
export function sentLine(
  line: number,
  value: unknown,
  answer: Answer,
  started: number,
  success: Outcome,
  errorsOf: (body: unknown) => FieldError[],
): Result {
  const ok = answer.status >= 200 && answer.status < 300;
  return {
    line,
    ...identify(value),
    outcome: ok ? success : answer.status === 400 ? 'validation_failed' : 'failed',
    http_status: answer.status,
    kraken_account_number: null,
    errors: ok ? [] : errorsOf(answer.body),
    attempts: answer.attempts,
    ms: Date.now() - started,
  };
}

/** The transaction import's own 400 names the failing transaction's status; the others use the error body. */
export function postImportErrors(body: unknown) {
  const b = body as { status?: string; transaction_data?: { transaction_id?: string } } | null;
  if (b?.status === 'TRANSACTION_IMPORT_ERROR')
    return [
      {
        code: 'TRANSACTION_IMPORT_ERROR',
        attr: `transaction_id:${b.transaction_data?.transaction_id ?? ''}`,
      },
    ];
  return fieldErrors(body);
}

/**
 * A post-import line: `created`, or `already_imported` when the answer says everything the line asked for was on
 * the account already (a file sent again), else as `sentLine`.
 */
export function postImportLine(
  kind: PostImportKind,
  line: number,
  value: unknown,
  answer: Answer,
  started: number,
): Result {
  const result = sentLine(line, value, answer, started, 'created', postImportErrors);
  return alreadyThere(kind, value, answer) ? { ...result, outcome: 'already_imported', errors: [] } : result;
}

/**
 * Whether the answer says that every item of the request was already on the account. Notes and transactions
 * answer 201 with a status per item; statements refuse the whole request, naming each statement already there
 * (a request that also holds a new one wrote nothing: it is not "already imported"). Billing documents refuse
 * every import after the ledger's first, naming `billing_documents_already_imported` when it is this same one; a
 * payment instruction answers 201 with `PAYMENT_INSTRUCTION_ALREADY_ACTIVE` (docs/client.md, "post-import").
 */
function alreadyThere(kind: PostImportKind, value: unknown, answer: Answer): boolean {
  const v = (value ?? {}) as { statements?: unknown };
  const b = (answer.body ?? {}) as {
    code?: string;
    status?: string;
    errors?: { code?: string; attr?: string }[];
  };
  switch (kind) {
    case 'notes':
      return answer.status === 201 && allStatus(answer.body, 'NOTE_ALREADY_EXISTS');
    case 'transactions':
      return (
        answer.status === 201 &&
        allStatus((answer.body as { results?: unknown } | null)?.results, 'TRANSACTION_ALREADY_EXISTS')
      );
    case 'statements': {
      if (answer.status !== 400 || b.code !== 'historical_statement_already_exists') return false;
      if (!Array.isArray(v.statements) || v.statements.length === 0) return false;
      const there = new Set(
        (b.errors ?? []).filter((e) => e.code === 'historical_statement_already_exists').map((e) => e.attr),
      );
      return v.statements.every((_, i) => there.has(`statements.${i}.statement_id`));
    }
    case 'billing-documents':
      return (
        answer.status === 400 &&
        b.code === 'ledger_has_finalized_billing_document' &&
        (b.errors ?? []).some((e) => e.code === 'billing_documents_already_imported')
      );
    case 'payment-instructions':
      return answer.status === 201 && b.status === 'PAYMENT_INSTRUCTION_ALREADY_ACTIVE';
  }
}

/** A non-empty array whose every item has this `status`. */
function allStatus(items: unknown, status: string): boolean {
  return (
    Array.isArray(items) &&
    items.length > 0 &&
    items.every((item) => (item as { status?: unknown } | null)?.status === status)
  );
}
