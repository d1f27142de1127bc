import { compareFigures } from '../../domain/reconciliation/compare.js';
import { formatCents } from '../../domain/money.js';
import type { ApiClient } from '../http.js';
import type { Result } from '../outcomes.js';
import type { Progress } from '../progress.js';
import type { ReportWriter } from '../report.js';
import { accountKey, readExpectations, type PostImportFiles } from './expectations.js';
import { readBack, type ReadBackOptions } from './read-back.js';
import type { DifferenceTally } from './tally.js';

/** The codes of a batch item that mean the service has no created account (`not_created`). */
const NOT_CREATED: ReadonlySet<string> = new Set(['account_not_found', 'not_found']);

/**
 * `import-client reconcile`: the expected side from the files (see `expectations.ts`), the service's side in
 * batches (`read-back.ts`), one result per cohort account: `matched`, `mismatched` with its differences and
 * money difference, `not_created`, `failed`. Returns whether the run was interrupted and the batches' times.
 */
export async function reconcileCohort(
  api: ApiClient,
  input: { cohort: string; files: PostImportFiles },
  options: ReadBackOptions,
  out: { report: ReportWriter; progress: Progress; tally: DifferenceTally },
): Promise<{ interrupted: boolean; batchMs: number[]; unreadable: number }> {
  const record = (result: Result) => {
    out.report.add(result);
    out.progress.tick();
  };
  const { accounts, inputs } = await readExpectations(input.cohort, input.files, record);
  out.tally.inputs = inputs;
  const unreadable = Object.values(inputs).reduce((n, c) => n + c.unreadable, 0);
  const { batchMs } = await readBack(api, accounts.values(), options, (account, answer, batch) => {
    const base = {
      line: account.line,
      import_supplier: account.supplier,
      external_account_number: account.external,
      attempts: batch.attempts,
      ms: Math.round(batch.ms),
    };
    let result: Result;
    if (answer.kind === 'figures') {
      const { differences, moneyDifferenceCents } = compareFigures(
        account.expectation.figures(),
        answer.figures,
      );
      result = {
        ...base,
        outcome: differences.length === 0 ? 'matched' : 'mismatched',
        http_status: 200,
        kraken_account_number: answer.figures.kraken_account_number,
        errors: [],
        differences,
        money_difference: formatCents(moneyDifferenceCents),
      };
    } else if (answer.kind === 'missing') {
      result = {
        ...base,
        outcome: NOT_CREATED.has(answer.code) ? 'not_created' : 'failed',
        http_status: 200,
        kraken_account_number: null,
        errors: [{ code: answer.code, attr: 'non_field_errors' }],
      };
    } else {
      result = {
        ...base,
        outcome: 'failed',
        http_status: answer.httpStatus,
        kraken_account_number: null,
        errors: answer.errors,
      };
    }
    // Compared once: the account's expectation is no longer needed.
    accounts.delete(accountKey(account.supplier, account.external));
    record(result);
  });
  out.tally.batchMs = batchMs;
  out.tally.batchSize = options.batchSize;
  return { interrupted: options.stop.aborted, batchMs, unreadable };
}
