import type { z } from 'zod';
import type { ExpectedFigures } from '../../../domain/reconciliation/expected.js';
import { AccountExpectation } from '../../../domain/reconciliation/expected.js';
import {
  accountFacts,
  billingDocumentsImportFacts,
  notesImportFacts,
  statementsImportFacts,
  transactionsImportFacts,
} from '../../../domain/reconciliation/inputs.js';
import { normaliseIdentifier } from '../../../vocabulary/identifiers.js';
import { issuesToFieldErrors } from '../../../domain/validation/zod-issues.js';
import { identify } from '../identity.js';
import { readJsonLines } from '../input.js';
import type { Result } from '../outcomes.js';
import type { ReconcileStore } from './store.js';
import type { InputCounts } from './tally.js';

/**
 * Reconcile's expected side, read from the files that were sent: the post-import files first, kind by kind in
 * the API's workflow order (transactions, billing documents, statements, notes; see docs/api.md "The
 * workflow"), each file line by line, every usable line put aside on disk (`store.ts`); then the cohort file
 * (account payloads), line by line: each account's expectation starts from its payload, takes its post-import
 * lines in the order they were read, and is handed on as its figures at once. Only the order of transactions
 * before statements matters: a statement import moves the open statement period forward, which decides
 * whether later imported transactions are re-dated (and so whether the service writes its re-dating note).
 *
 * What it holds in memory is one account's expectation at a time, whatever the cohort's size.
 */

export const postImportKinds = ['transactions', 'billing-documents', 'statements', 'notes'] as const;
export type PostImportKind = (typeof postImportKinds)[number];
export type PostImportFiles = Record<PostImportKind, readonly string[]>;

/** One account of the cohort: its line, its key as the service keys it, and the figures it should hold. */
export type CohortAccount = {
  line: number;
  supplier: string;
  external: string;
  figures: ExpectedFigures;
};

/** An account's key: supplier code and external number, as the service normalises them. */
export const accountKey = (supplier: string, external: string) => `${supplier}\t${external}`;

/** The first unreadable lines each kind names in the summary. */
const MAX_UNREADABLE_LISTED = 10;

const schemas = {
  transactions: transactionsImportFacts,
  'billing-documents': billingDocumentsImportFacts,
  statements: statementsImportFacts,
  notes: notesImportFacts,
} as const;

export type Inputs = InputCounts & Record<string, { unreadable_lines?: string[] }>;

/**
 * Reads the post-import files into `store`, then the cohort. Cohort lines that name no comparable account
 * (not JSON, not a payload the service could have created, a repeat of an earlier account) are handed to
 * `report` at once; each account to compare is handed to `onAccount` with its figures as soon as its line is
 * read (its service side can be read then; the next line is read once the promise it returns settles). Stops
 * reading the cohort once `stop` is aborted. Returns what the files held, by kind.
 */
export async function readExpectations(
  cohort: string,
  files: PostImportFiles,
  store: ReconcileStore,
  report: (result: Result) => void,
  onAccount: (account: CohortAccount) => void | Promise<void>,
  stop?: AbortSignal,
): Promise<Inputs> {
  const inputs: Inputs = {};
  const counts = (kind: string) =>
    (inputs[kind] ??= { lines: 0, applied: 0, not_in_cohort: 0, unreadable: 0 });
  counts('cohort');
  for (const kind of postImportKinds)
    for (const file of files[kind]) await readPostImport(kind, file, store, counts(kind), inputs);
  store.postImportsRead();
  await readCohort(cohort, store, counts('cohort'), report, onAccount, stop);
  // A post-import line is applied when its account is in the cohort (however late the cohort names it).
  const applied = store.appliedByKind();
  postImportKinds.forEach((kind, i) => {
    const c = inputs[kind];
    if (!c) return;
    c.applied = applied.get(i) ?? 0;
    c.not_in_cohort = c.lines - c.unreadable - c.applied;
  });
  return inputs;
}

type Counts = InputCounts[string];

/** The cohort file: each account that can be compared to `onAccount`, every other line reported at once. */
async function readCohort(
  cohort: string,
  store: ReconcileStore,
  counts: Counts,
  report: (result: Result) => void,
  onAccount: (account: CohortAccount) => void | Promise<void>,
  stop?: AbortSignal,
): Promise<void> {
  for await (const line of readJsonLines(cohort)) {
    if (stop?.aborted) return;
    counts.lines++;
    const who = line.ok ? identify(line.value) : { import_supplier: null, external_account_number: null };
    const result = (outcome: Result['outcome'], errors: Result['errors']): Result => ({
      line: line.line,
      import_supplier: who.import_supplier === null ? null : normaliseIdentifier(who.import_supplier),
      external_account_number:
        who.external_account_number === null ? null : normaliseIdentifier(who.external_account_number),
      outcome,
      http_status: null,
      kraken_account_number: null,
      errors,
      attempts: 0,
      ms: 0,
    });
    if (!line.ok) {
      counts.unreadable++;
      report(result('parse_error', [{ code: 'parse_error', attr: 'non_field_errors' }]));
      continue;
    }
    const parsed = accountFacts.safeParse(line.value);
    if (!parsed.success) {
      // Not a payload the service could have created: nothing to compare with.
      counts.unreadable++;
      report(result('failed', fieldErrors(parsed.error, line.value)));
      continue;
    }
    const key = accountKey(parsed.data.import_supplier, parsed.data.external_account_number);
    const first = store.claim(key, line.line);
    if (first !== null) {
      report(result('duplicate', [{ code: 'duplicate_account', attr: `line:${first}` }]));
      continue;
    }
    counts.applied++;
    const expectation = new AccountExpectation(parsed.data);
    for (const { kind, body } of store.postImportsOf(key))
      apply(expectation, postImportKinds[kind]!, body as PostImportBody);
    await onAccount({
      line: line.line,
      supplier: parsed.data.import_supplier,
      external: parsed.data.external_account_number,
      figures: expectation.figures(),
    });
  }
}

/** One post-import file, line by line: each usable line into the store, under its account's key. */
async function readPostImport(
  kind: PostImportKind,
  file: string,
  store: ReconcileStore,
  counts: Counts,
  inputs: Inputs,
): Promise<void> {
  const unreadable = (n: number) => {
    counts.unreadable++;
    const listed = (inputs[kind]!.unreadable_lines ??= []);
    if (listed.length < MAX_UNREADABLE_LISTED) listed.push(`${file}:${n}`);
  };
  const index = postImportKinds.indexOf(kind);
  for await (const line of readJsonLines(file)) {
    counts.lines++;
    const parsed = line.ok ? schemas[kind].safeParse(line.value) : null;
    if (!parsed?.success) {
      unreadable(line.line);
      continue;
    }
    const body = parsed.data;
    store.addPostImport(accountKey(body.import_supplier, body.external_account_number), index, body);
  }
}

type PostImportBody = z.output<(typeof schemas)[PostImportKind]>;

function apply(expectation: AccountExpectation, kind: PostImportKind, body: PostImportBody): void {
  switch (kind) {
    case 'transactions':
      return expectation.addTransactions(body as z.output<typeof transactionsImportFacts>);
    case 'billing-documents':
      return expectation.addBillingDocuments(body as z.output<typeof billingDocumentsImportFacts>);
    case 'statements':
      return expectation.addStatements(body as z.output<typeof statementsImportFacts>);
    case 'notes':
      return expectation.addNotes(body as z.output<typeof notesImportFacts>);
  }
}

/** A refused payload's problems as codes and paths (never values). */
function fieldErrors(error: z.ZodError, input: unknown): Result['errors'] {
  return issuesToFieldErrors(error.issues, input).map(({ code, attr }) => ({ code, attr }));
}
