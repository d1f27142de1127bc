import type { Answer } from './http.js';
import { identify } from './identity.js';
import { fieldErrors, type FieldError, type Outcome, type Result } from './outcomes.js';

// The result of a line of `validate` or `post-import` sent as one request, from the service's answer.

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
