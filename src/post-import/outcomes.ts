import type { FieldError } from '../domain/validation/field-error.js';

/**
 * A post-import request refused for what is stored (not for its shape, which the validators check): the
 * code is one of the API's error catalogue, turned into the documented body by the route.
 */
export type Refusal = {
  code:
    | 'ledger_not_found'
    | 'ledger_has_finalized_billing_document'
    | 'historical_statement_already_exists'
    | 'request_failed_validation';
  errors?: FieldError[];
};

export function ledgerNotFound(ledgerCode: string | undefined): Refusal {
  return {
    code: 'ledger_not_found',
    errors: ledgerCode
      ? [
          {
            detail: `The account has no ledger ${ledgerCode}.`,
            code: 'ledger_not_found',
            attr: 'ledger_code',
          },
        ]
      : [],
  };
}
