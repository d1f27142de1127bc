import type { FieldError } from '../../domain/validation/field-error.js';

/**
 * A post-import request refused: by its shape (the validators), its supplier or account, what is stored, or
 * the payment vendor. The code is one of the API's error catalogue, turned into the documented body by the
 * route; `detail` replaces the catalogue's detail when given.
 */
export type Refusal = {
  code:
    | 'request_failed_validation'
    | 'import_supplier_not_found'
    | 'import_supplier_migration_not_ongoing'
    | 'account_not_found'
    | 'ledger_not_found'
    | 'ledger_has_finalized_billing_document'
    | 'historical_statement_already_exists'
    | 'vendor_instruction_not_found'
    | 'account_has_active_payment_instruction'
    | 'vendor_unavailable';
  errors?: FieldError[];
  detail?: string;
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

export type InstructionRequest = { vendor: string; reference: string; type: string };

/** Expected outcomes of a verification, returned (not thrown) by the job so the waiting step can map them. */
export type VerifyOutcome =
  | { ok: true; instructionId: string }
  | {
      ok: false;
      code: 'vendor_instruction_not_found' | 'account_has_active_payment_instruction' | 'vendor_unavailable';
    };
