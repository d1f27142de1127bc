import type { Command } from 'commander';
import { resolve } from 'node:path';
import { conclude, planFrom, reportDir, startReport, type Common } from '../command-report.js';
import { UsageError } from '../http.js';
import { reconcileOutcomes, type Result } from '../outcomes.js';
import { reconcileCohort } from '../reconcile/command.js';
import { MAX_BATCH } from '../reconcile/read-back.js';
import { DifferenceTally } from '../reconcile/tally.js';
import { ResumeState } from '../state.js';
import { api, checkInput, helpAfter, positiveInteger, reportOptions, run } from './context.js';

type Options = Common & {
  transactions: string[];
  billingDocuments: string[];
  statements: string[];
  notes: string[];
  batchSize: number;
  concurrency: number;
  state?: string;
};

const collect = (value: string, previous: string[]) => [...previous, value];

/** `import-client reconcile <cohort>`: what each account should hold (from the files sent) against the service. */
export function reconcileCommand(program: Command): void {
  const command = program
    .command('reconcile <cohort>')
    .description(
      'compare what each account of a cohort should hold (from the files sent) with what the service holds',
    )
    .option(
      '--transactions <file>',
      'a transactions post-import file that was sent (repeatable)',
      collect,
      [],
    )
    .option('--billing-documents <file>', 'a billing documents post-import file (repeatable)', collect, [])
    .option('--statements <file>', 'a statements post-import file (repeatable)', collect, [])
    .option('--notes <file>', 'a notes post-import file (repeatable)', collect, [])
    .option('--batch-size <n>', `accounts per request (at most ${MAX_BATCH})`, (v) => Number(v), MAX_BATCH)
    .option('--concurrency <n>', 'batch requests in flight', positiveInteger, 4)
    .option(
      '--state <path>',
      'resume: an account that matched in an earlier run on this state, with the same expected figures, is not read again',
    );
  reportOptions(command);
  helpAfter(command, {
    success: 'every account matched (and every input line was readable)',
    failure: 'some account did not match, or some input line could not be used',
  }).action(reconcile);
}

async function reconcile(cohort: string, o: Options): Promise<void> {
  if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > MAX_BATCH)
    throw new UsageError(`--batch-size must be an integer from 1 to ${MAX_BATCH}`);
  const files = {
    transactions: o.transactions,
    'billing-documents': o.billingDocuments,
    statements: o.statements,
    notes: o.notes,
  };
  const all = [cohort, ...Object.values(files).flat()];
  for (const file of all) checkInput(file);
  if (all.filter((f) => f === '-').length > 1)
    throw new UsageError('standard input (-) can be read for one file only');
  const client = api();
  // The key is checked before anything is read: a refused key is a usage error, not a cohort of failures.
  const organisation = await client.organisation();
  const state = o.state
    ? new ResumeState(resolve(o.state), {
        service: client.baseUrl,
        organisation,
        mode: 'reconcile',
        team: null,
        dry_run: false,
      })
    : undefined;
  try {
    const tally = new DifferenceTally();
    const { report, progress } = startReport(reportDir(o), o, {
      client,
      outcomes: reconcileOutcomes,
      extension: tally,
      history: state,
      state: state?.path,
    });
    await planFrom(progress, cohort);
    const resume = state && {
      matched: (key: string, hash: string) => state.matched(key, hash),
      record: (key: string, hash: string, result: Result) => state.record(key, hash, false, result),
    };
    const { unreadable } = await reconcileCohort(
      client,
      { cohort, files },
      { batchSize: o.batchSize, concurrency: o.concurrency, stop: run.stopped },
      { report, progress, tally, resume },
    );
    await conclude(report, progress, { stopped: run.reason, unreadableInputs: unreadable });
  } finally {
    state?.close();
  }
}
