import { createHash } from 'node:crypto';
import { compareFigures } from '../../../domain/reconciliation/compare.js';
import { formatCents } from '../../../vocabulary/money.js';
import type { ApiClient } from '../http.js';
import type { Result } from '../outcomes.js';
import type { Progress } from '../progress.js';
import type { ReportWriter } from '../report.js';
import { readExpectations, type CohortAccount, type PostImportFiles } from './expectations.js';
import { BatchReader, type ReadBackAnswer, type ReadBackOptions } from './read-back.js';
import { ReconcileStore } from './store.js';
import type { DifferenceTally } from './tally.js';

/** The codes of a batch item that mean the service has no created account (`not_created`). */
const NOT_CREATED: ReadonlySet<string> = new Set(['account_not_found', 'not_found']);

/** Where a resumed reconciliation (`--state`) keeps what matched: the resume state (`ResumeState.matched`). */
export interface MatchedBefore {
  /** The earlier result of an account that matched with these same expected figures, else null. */
  matched(key: string, hash: string): Result | null;
  record(key: string, hash: string, result: Result): void;
}

/**
 * `import-client reconcile`: the expected side from the files (see `expectations.ts`: the post-import files put
 * aside on disk first, then the cohort read line by line), the service's side in batches (`read-back.ts`), and
 * one result per cohort account, written as its batch is answered: `matched`, `mismatched` with its
 * differences and money difference, `not_created`, `failed`. An account's batch goes out as its cohort line is
 * read, so the service reads while the client reads on; the cohort is read no faster than the service answers
 * (`BatchReader.add` waits while batches queue), and nothing of an account is kept once its result is written:
 * the client's memory does not grow with the cohort. Results are in the order batches are answered (the
 * cohort's order batch by batch; each line's number is in its result). With `resume`, an account that matched
 * in an earlier run with the same expected figures is not read again (`done_earlier`). Returns whether the run
 * was interrupted and how many input lines could not be used.
 */
export async function reconcileCohort(
  api: ApiClient,
  input: { cohort: string; files: PostImportFiles },
  options: ReadBackOptions,
  out: { report: ReportWriter; progress: Progress; tally: DifferenceTally; resume?: MatchedBefore },
): Promise<{ interrupted: boolean; unreadable: number }> {
  const record = (result: Result) => {
    out.report.add(result);
    out.progress.tick(result.done_earlier === true);
  };
  const reader = new BatchReader(api, options, (account, answer, batch) => {
    const result = resultOf(account, answer, batch);
    if (out.resume && result.outcome !== 'failed') out.resume.record(keyOf(account), hashOf(account), result);
    record(result);
  });
  const send = async (account: CohortAccount) => {
    const earlier = out.resume?.matched(keyOf(account), hashOf(account));
    if (earlier) return record({ ...earlier, line: account.line, attempts: 0, ms: 0, done_earlier: true });
    await reader.add(account);
  };
  const store = new ReconcileStore();
  try {
    const inputs = await readExpectations(input.cohort, input.files, store, record, send, options.stop);
    await reader.finish();
    out.tally.inputs = inputs;
  } finally {
    store.close();
  }
  out.tally.batchMs = reader.batchMs;
  out.tally.batchSize = options.batchSize;
  const unreadable = Object.values(out.tally.inputs).reduce((n, c) => n + c.unreadable, 0);
  return { interrupted: options.stop.aborted, unreadable };
}

/** An account's key in the resume state, as `migrate` keys it. */
const keyOf = (account: CohortAccount) => `${account.supplier}/${account.external}`;

/** The digest of an account's expected figures: an account matched before is skipped only when they are the same. */
function hashOf(account: CohortAccount): string {
  const text = JSON.stringify(account.figures, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  return createHash('sha256').update(text).digest('hex');
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
    const { differences, moneyDifferenceCents } = compareFigures(account.figures, answer.figures);
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
