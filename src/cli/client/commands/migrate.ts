import { dirname, join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { conclude, planFrom, reportDir, startReport, type Common } from '../command-report.js';
import { CreateGate } from '../create-gate.js';
import { failedIn, onlyAccounts } from '../diff/results-file.js';
import { UsageError, type ApiClient } from '../http.js';
import { countLines, readJsonLines, type InputLine } from '../input.js';
import { migrateAccount } from '../migrate.js';
import { declarePlan, peekSupplier, planLine, type PlanBody, type PlanFlags } from '../plan.js';
import { PlanHold } from '../plan-hold.js';
import { runLines } from '../run.js';
import { ResumeState } from '../state.js';
import {
  api,
  checkInput,
  concurrencyOf,
  concurrencyOptions,
  helpAfter,
  reportOptions,
  run,
} from './context.js';
import { planOptions } from './plan-options.js';

type Options = Common &
  PlanFlags & {
    team?: string;
    dryRun: boolean;
    mode: 'v1' | 'v2';
    concurrency: number;
    adaptive: boolean;
    pollTimeout: number;
    state?: string;
    only?: string;
  };

/** `import-client migrate <file>`: stage and create every account (v1), or schedule and follow it (v2). */
export function migrateCommand(program: Command): void {
  const command = program
    .command('migrate <file>')
    .description('stage and create every account (v1), or schedule and follow it (v2)')
    .option('--team <name>', 'operations team (v1: required; v2: used when the payload names none)')
    .option('--dry-run', 'create as a dry run: nothing is created', false)
    .addOption(
      new Option('--mode <mode>', 'v1: stage + create; v2: schedule + follow')
        .choices(['v1', 'v2'])
        .default('v1'),
    )
    .option(
      '--poll-timeout <seconds>',
      "how long one account's status is followed before it ends failed (status_unknown)",
      (v) => Number(v),
      1800,
    )
    .option('--state <path>', 'resume state file (default: import-state.sqlite beside the report)')
    .option(
      '--only <selection>',
      'failed-in:<report>: send only the accounts that did not succeed in that run (its folder or results.jsonl)',
    );
  reportOptions(planOptions(concurrencyOptions(command))).addHelpText(
    'after',
    [
      '',
      "Cohort plan: declared for the supplier of the file's first account before anything is sent (expected",
      "accounts: the file's lines; a rerun keeps the plan's window, canary and breaker unless the flags change them);",
      'a plan the service refuses exits 2 with each field path and code. While the plan holds the cohort (canary,',
      'breaker, operator, before its window) no new account starts and none is reported failed: migrate waits',
      'until it is resumed (import-admin plan resume <CODE>, the cohort page, POST .../plan/resume/).',
    ].join('\n'),
  );
  helpAfter(command, {
    success: 'every line is created, already_imported or dry_run_ok',
    failure: 'some line is not (duplicate_line included)',
    key: true,
    window: true,
  }).action(migrate);
}

async function migrate(file: string, o: Options): Promise<void> {
  if (o.mode === 'v1' && !o.team) throw new UsageError('v1 needs --team <operations team name>');
  if (!(o.pollTimeout > 0)) throw new UsageError('--poll-timeout must be a positive number of seconds');
  checkInput(file);
  const only = o.only === undefined ? null : await selection(o.only);
  const concurrency = concurrencyOf(o);
  const client = api({ throttleTimeoutMs: o.pollTimeout * 1000, concurrency });
  const dir = reportDir(o);
  const state = await openState(client, o, dir);
  try {
    // v1 sends each line's text as it is: the client never needs the parsed account (see identity.ts).
    let input: AsyncIterable<InputLine> = readJsonLines(file, { parse: o.mode === 'v2' });
    // Declared before the report starts: a refused plan leaves an earlier report as it was, and nothing is sent.
    const declared = await cohortPlan(client, file, input, o);
    input = declared.input;
    // The adaptive default paces creates on the service's share; `--no-adaptive` keeps exactly N lines going.
    const creates = o.mode === 'v1' && o.adaptive ? new CreateGate() : undefined;
    const { report, progress } = startReport(dir, o, {
      history: state,
      client,
      state: state.path,
      concurrency,
      creates,
    });
    if (only) progress.plan(only.size);
    else if (declared.lines !== null) progress.plan(declared.lines);
    else await planFrom(progress, file);
    if (only) input = onlyAccounts(input, only);
    const plan = new PlanHold(client, declared.plan?.import_supplier_code ?? null, run.stopped, () =>
      run.stop('window_ended'),
    );
    if (declared.plan && o.mode === 'v1') plan.start(declared.plan);
    const handle = migrateAccount(client, state, {
      plan,
      creates,
      mode: o.mode,
      team: o.team ?? null,
      dryRun: o.dryRun,
      cancelled: run.cancelled,
      pollTimeoutMs: o.pollTimeout * 1000,
    });
    await runLines(input, { concurrency, stop: run }, handle, report, progress);
    await conclude(report, progress, { stopped: run.reason });
  } finally {
    state.close();
  }
}

/**
 * The cohort plan of the file's supplier (the first line naming one), declared with the file's lines as its
 * expected accounts (all of them: `--only` and a resumed state send fewer, the cohort is the file), unless
 * `--no-plan`, `--dry-run` (the plan admits no dry run), or standard input without `--expected-accounts`.
 */
async function cohortPlan(
  client: ApiClient,
  file: string,
  input: AsyncIterable<InputLine>,
  o: Options,
): Promise<{ input: AsyncIterable<InputLine>; plan: PlanBody | null; lines: number | null }> {
  const none = { input, plan: null, lines: null };
  if (!o.plan || o.dryRun || (file === '-' && o.expectedAccounts === undefined)) return none;
  const lines = file === '-' ? null : await countLines(file);
  const expected = o.expectedAccounts ?? lines;
  if (!expected) return { ...none, lines };
  const peeked = await peekSupplier(input);
  if (!peeked.supplier) {
    process.stderr.write(`[import-client] no cohort plan declared: no line of ${file} names a supplier\n`);
    return { ...none, input: peeked.input, lines };
  }
  const plan = await declarePlan(client, peeked.supplier, expected, o);
  if (plan) process.stderr.write(`[import-client] ${planLine(plan)}\n`);
  return { input: peeked.input, plan, lines };
}

/** The accounts `--only` names (`failed-in:<report>`). */
async function selection(only: string): Promise<Set<string>> {
  const match = /^failed-in:(.+)$/s.exec(only);
  if (!match) throw new UsageError(`--only takes failed-in:<report>, not ${only}`);
  const { keys, unnamed } = await failedIn(match[1]!);
  if (unnamed > 0)
    process.stderr.write(
      `[import-client] --only: ${unnamed} line(s) of ${match[1]} that did not succeed name no account (not JSON?): they cannot be selected\n`,
    );
  return keys;
}

/**
 * The resume state, beside the report folder by default (runs that write their reports in one folder share
 * one state); opened before the report is started, so a refused state leaves any earlier report as it was.
 */
async function openState(client: ApiClient, o: Options, dir: string): Promise<ResumeState> {
  const path = resolve(o.state ?? join(dirname(dir), 'import-state.sqlite'));
  return new ResumeState(path, {
    service: client.baseUrl,
    organisation: await client.organisation(),
    mode: o.mode,
    team: o.team ?? null,
    dry_run: o.dryRun,
  });
}
