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
import type { InputCounts } from './tally.js';

/**
 * Reconcile's expected side, read from the files that were sent: the cohort file (account payloads), then the
 * post-import files, kind by kind in the API's workflow order (transactions, billing documents, statements,
 * notes; see docs/api.md "The workflow"), each file line by line. Only the order of transactions before
 * statements matters: a statement import moves the open statement period forward, which decides whether later
 * imported transactions are re-dated (and so whether the service writes its re-dating note).
 *
 * Streams every file and keeps one compact `AccountExpectation` per account of the cohort.
 */

export const postImportKinds = ['transactions', 'billing-documents', 'statements', 'notes'] as const;
export type PostImportKind = (typeof postImportKinds)[number];
export type PostImportFiles = Record<PostImportKind, readonly string[]>;

/**
 * One account of the cohort: its line, its key as the service keys it, what it should hold: `expectation`
 * while the files are read, then only its `figures` (without the ids deduplication needed) until the
 * service's side is compared with them, then neither (see `reconcileCohort`).
 */
export type CohortAccount = {
  line: number;
  supplier: string;
  external: string;
  expectation: AccountExpectation | null;
  figures: ExpectedFigures | null;
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

export type Expectations = {
  /** The accounts to compare, by key, in the order of the cohort file. */
  accounts: Map<string, CohortAccount>;
  inputs: InputCounts & Record<string, { unreadable_lines?: string[] }>;
};

/**
 * Reads the cohort and the post-import files. Cohort lines that name no comparable account (not JSON, not a
 * payload the service could have created, a repeat of an earlier account) are handed to `report` at once; each
 * account to compare is handed to `onAccount` as soon as its line is read (its service side can be read then).
 */
export async function readExpectations(
  cohort: string,
  files: PostImportFiles,
  report: (result: Result) => void,
  onAccount: (account: CohortAccount) => void = () => {},
): Promise<Expectations> {
  const accounts = new Map<string, CohortAccount>();
  const inputs: Expectations['inputs'] = {};
  const counts = (kind: string) =>
    (inputs[kind] ??= { lines: 0, applied: 0, not_in_cohort: 0, unreadable: 0 });
  await readCohort(cohort, accounts, counts('cohort'), (result) => report(result), onAccount);
  for (const kind of postImportKinds)
    for (const file of files[kind]) await readPostImport(kind, file, accounts, counts(kind), inputs);
  return { accounts, inputs };
}

type Counts = InputCounts[string];

/** The cohort file: each account that can be compared into `accounts`, every other line reported at once. */
async function readCohort(
  cohort: string,
  accounts: Map<string, CohortAccount>,
  counts: Counts,
  report: (result: Result) => void,
  onAccount: (account: CohortAccount) => void,
): Promise<void> {
  for await (const line of readJsonLines(cohort)) {
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
    if (accounts.has(key)) {
      report(result('duplicate', [{ code: 'duplicate_account', attr: `line:${accounts.get(key)!.line}` }]));
      continue;
    }
    counts.applied++;
    const account: CohortAccount = {
      line: line.line,
      supplier: parsed.data.import_supplier,
      external: parsed.data.external_account_number,
      expectation: new AccountExpectation(parsed.data),
      figures: null,
    };
    accounts.set(key, account);
    onAccount(account);
  }
}

/** One post-import file, applied line by line to the expectations of the cohort's accounts it names. */
async function readPostImport(
  kind: PostImportKind,
  file: string,
  accounts: Map<string, CohortAccount>,
  counts: Counts,
  inputs: Expectations['inputs'],
): Promise<void> {
  const unreadable = (n: number) => {
    counts.unreadable++;
    const listed = (inputs[kind]!.unreadable_lines ??= []);
    if (listed.length < MAX_UNREADABLE_LISTED) listed.push(`${file}:${n}`);
  };
  for await (const line of readJsonLines(file)) {
    counts.lines++;
    const parsed = line.ok ? schemas[kind].safeParse(line.value) : null;
    if (!parsed?.success) {
      unreadable(line.line);
      continue;
    }
    const body = parsed.data;
    const account = accounts.get(accountKey(body.import_supplier, body.external_account_number));
    if (!account) {
      counts.not_in_cohort++;
      continue;
    }
    counts.applied++;
    // Every account keeps its expectation until the last file is read (see `reconcileCohort`).
    apply(account.expectation!, kind, body);
  }
}

function apply(
  expectation: AccountExpectation,
  kind: PostImportKind,
  body: z.output<(typeof schemas)[PostImportKind]>,
): void {
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
