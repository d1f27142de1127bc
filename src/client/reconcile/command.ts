import { compareFigures } from '../../domain/reconciliation/compare.js';
import { formatCents } from '../../vocabulary/money.js';
import type { ApiClient } from '../http.js';
import type { Result } from '../outcomes.js';
import type { Progress } from '../progress.js';
import type { ReportWriter } from '../report.js';
import { readExpectations, type CohortAccount, type PostImportFiles } from './expectations.js';
import { BatchReader, type ReadBackAnswer, type ReadBackOptions } from './read-back.js';
import type { DifferenceTally } from './tally.js';

/** The codes of a batch item that mean the service has no created account (`not_created`). */
const NOT_CREATED: ReadonlySet<string> = new Set(['account_not_found', 'not_found']);

/**
 * `import-client reconcile`: the expected side from the files (see `expectations.ts`), the service's side in
 * batches sent while the files are still being read (`read-back.ts`), then one result per cohort account:
 * `matched`, `mismatched` with its differences and money difference, `not_created`, `failed`. Returns whether
 * the run was interrupted and how many input lines could not be used.
 */
export async function reconcileCohort(
  api: ApiClient,
  input: { cohort: string; files: PostImportFiles },
  options: ReadBackOptions,
  out: { report: ReportWriter; progress: Progress; tally: DifferenceTally },
): Promise<{ interrupted: boolean; unreadable: number }> {
  const record = (result: Result) => {
    out.report.add(result);
    out.progress.tick();
  };
  // Answers wait here until the expected side is complete (a post-import file may still change an account).
  const answers: Array<[CohortAccount, ReadBackAnswer, { ms: number; attempts: number }]> = [];
  const reader = new BatchReader(api, options, (account, answer, batch) =>
    answers.push([account, answer, batch]),
  );
  const { inputs } = await readExpectations(input.cohort, input.files, record, (a) => reader.add(a));
  await reader.finish();
  out.tally.inputs = inputs;
  out.tally.batchMs = reader.batchMs;
  out.tally.batchSize = options.batchSize;
  for (const [account, answer, batch] of answers) record(resultOf(account, answer, batch));
  const unreadable = Object.values(inputs).reduce((n, c) => n + c.unreadable, 0);
  return { interrupted: options.stop.aborted, unreadable };
}

/** One account's result from the service's answer and its expected figures. */
function resultOf(
  account: CohortAccount,
  answer: ReadBackAnswer,
  batch: { ms: number; attempts: number },
): Result {
  const base = {
    line: account.line,
    import_supplier: account.supplier,
    external_account_number: account.external,
    attempts: batch.attempts,
    ms: Math.round(batch.ms),
  };
  if (answer.kind === 'figures') {
    const { differences, moneyDifferenceCents } = compareFigures(
      account.expectation.figures(),
      answer.figures,
    );
    return {
      ...base,
      outcome: differences.length === 0 ? 'matched' : 'mismatched',
      http_status: 200,
      kraken_account_number: answer.figures.kraken_account_number,
      errors: [],
      differences,
      money_difference: formatCents(moneyDifferenceCents),
    };
  }
  if (answer.kind === 'missing')
    return {
      ...base,
      outcome: NOT_CREATED.has(answer.code) ? 'not_created' : 'failed',
      http_status: 200,
      kraken_account_number: null,
      errors: [{ code: answer.code, attr: 'non_field_errors' }],
    };
  return {
    ...base,
    outcome: 'failed',
    http_status: answer.httpStatus,
    kraken_account_number: null,
    errors: answer.errors,
  };
}
