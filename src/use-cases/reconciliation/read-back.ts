import { accountIdFor } from '../../storage/records/created-accounts.js';
import { formatCents } from '../../vocabulary/money.js';
import { issuesToFieldErrors } from '../../domain/validation/zod-issues.js';
import { sortErrors, type FieldError } from '../../domain/validation/field-error.js';
import { processKey } from '../../storage/processes/process-key.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import {
  reconciliationRequestSchema,
  type AccountReconciliation,
  type ReconciliationErrorCode,
  type ReconciliationMiss,
  type ReconciliationRequest,
} from '../../schemas/reconciliation.js';
import type { Storage } from '../../storage/index.js';
import type { JournalState } from '../../storage/journal/journal-state.js';

/**
 * Reconciliation's read-back: what the platform holds for created accounts, in the form the legacy side
 * computes too (`domain/reconciliation/digest.ts`). Each account costs the same whatever its history: its
 * import process and its ledger journal's newest entry, read by `_id` (the journal keeps every figure up to
 * date as entries are appended, see `storage/journal/journal-figures.ts`), so a batch of 500 is 500 times one
 * account, read a few at a time.
 */

/** How many accounts of a batch are read at once (each is about four reads by `_id`). */
const READ_CONCURRENCY = 16;

export type ReadBackDeps = { storage: Pick<Storage, 'processes' | 'journal'> };

export type ReadBack =
  | { ok: true; body: AccountReconciliation }
  | { ok: false; external_account_number: string; code: ReconciliationErrorCode };

/**
 * One account of the supplier (the caller's: tenancy is the route's): its figures, or `not_found` (no import
 * process, or one only an operator's skip made) or `account_not_found` (staged, not created).
 */
export async function readBackAccount(
  deps: ReadBackDeps,
  supplierCode: string,
  externalAccountNumber: string,
  now: Date,
): Promise<ReadBack> {
  const key = processKey(supplierCode, externalAccountNumber);
  const miss = (code: ReconciliationErrorCode): ReadBack => ({
    ok: false,
    external_account_number: externalAccountNumber,
    code,
  });
  // Both by `_id`, side by side: the account's id is derived from the process key.
  const [process, state] = await Promise.all([
    deps.storage.processes.find(key),
    deps.storage.journal.state(accountIdFor(key)),
  ]);
  if (!process || (!process.stagedAt && !process.krakenAccountNumber)) return miss('not_found');
  // Created means marked imported: the creation's last step, after every record of the account is written.
  if (!process.krakenAccountNumber) return miss('account_not_found');
  return {
    ok: true,
    body: reconciliationBody(
      {
        importSupplier: process.importSupplier,
        externalAccountNumber: process.externalAccountNumber,
        krakenAccountNumber: process.krakenAccountNumber,
      },
      state,
      now,
    ),
  };
}

/** Several accounts of one supplier, in the order asked, a few at a time. */
export async function readBackAccounts(
  deps: ReadBackDeps,
  supplierCode: string,
  externalAccountNumbers: readonly string[],
  now: Date,
): Promise<ReadBack[]> {
  const results: ReadBack[] = new Array(externalAccountNumbers.length);
  let next = 0;
  const worker = async () => {
    while (next < externalAccountNumbers.length) {
      const i = next++;
      results[i] = await readBackAccount(deps, supplierCode, externalAccountNumbers[i]!, now);
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(READ_CONCURRENCY, externalAccountNumbers.length) }, worker),
  );
  return results;
}

/** A read-back as the batch answers it: the account's body, or its number with the error. */
export function batchItem(result: ReadBack): AccountReconciliation | ReconciliationMiss {
  return result.ok
    ? result.body
    : { external_account_number: result.external_account_number, error: { code: result.code } };
}

/** The reconciliation body of a created account from its journal's newest state. */
function reconciliationBody(
  account: { importSupplier: string; externalAccountNumber: string; krakenAccountNumber: string },
  state: JournalState | null,
  now: Date,
): AccountReconciliation {
  const money = (minor: number) => formatCents(BigInt(minor));
  return {
    import_supplier_code: account.importSupplier,
    external_account_number: account.externalAccountNumber,
    kraken_account_number: account.krakenAccountNumber,
    as_of: formatUtcDatetime(now),
    ledgers: (state?.ledgers ?? []).map((l) => ({
      ledger_code: l.code,
      balance: money(l.balanceMinor),
      last_statement_balance: money(l.lastStatementBalanceMinor),
      last_statement_closing_date: l.lastStatementClosingDate,
      transactions: { count: l.transactionCount, digest: l.digest, by_origin: { ...l.byOrigin } },
      billing_documents: l.billingDocumentCount,
    })),
    statements: state?.summary.statements ?? 0,
    notes: state?.summary.notes ?? 0,
    payment_instruction: state?.summary.paymentInstruction ?? null,
  };
}

/**
 * The batch request's body checked: its data, or every error; more numbers than one request may carry is
 * `too_many` (the route's 400 `too_many_items`).
 */
export function parseReconciliationRequest(
  body: unknown,
): { ok: true; data: ReconciliationRequest } | { ok: false; tooMany: boolean; errors: FieldError[] } {
  const parsed = reconciliationRequestSchema.safeParse(body);
  if (parsed.success) return { ok: true, data: parsed.data };
  const errors = sortErrors(issuesToFieldErrors(parsed.error.issues, body));
  const tooMany = errors.some((e) => e.code === 'too_many_items' && e.attr === 'external_account_numbers');
  return { ok: false, tooMany, errors };
}
