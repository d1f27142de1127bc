#!/usr/bin/env node
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { buildCatalogue } from '../vocabulary/catalogue.js';
import { validateAccount } from '../domain/validation/index.js';
import { DEFAULT_REGION, regionNames } from '../domain/region/names.js';
import { ApiClient, UsageError } from './http.js';
import { readJsonLines } from './input.js';
import { migrateAccount } from './migrate.js';
import { fieldErrors, reconcileOutcomes, type Result } from './outcomes.js';
import { conclude, reportDir, startReport, type Common } from './command-report.js';
import { reconcileCohort } from './reconcile/command.js';
import { MAX_BATCH } from './reconcile/read-back.js';
import { DifferenceTally } from './reconcile/tally.js';
import { loadClientConfig } from '../config.js';
import { identify } from './identity.js';
import { runLines } from './run.js';
import { postImportLine, postImportPaths, sentLine, type PostImportKind } from './sent-line.js';
import { DRAIN_MS, RunStop, stopExitCodes } from './stop.js';
import { ResumeState } from './state.js';

/**
 * `import-client`: pushes a cohort from a JSON Lines file through the public HTTP API, with progress, a
 * resumable state file and a report. Server and key from the environment (IMPORT_BASE_URL, IMPORT_API_KEY),
 * never from flags. Exit codes: 0 every line succeeded, 1 some did not, 2 usage, 3 the key was refused during
 * the run, 130 after Ctrl-C (SIGINT), 143 after SIGTERM.
 */

const run = new RunStop();
let signalled = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    if (signalled) process.exit(stopExitCodes[signal]);
    signalled = true;
    process.stderr.write(
      `\n[import-client] ${signal}: stopping; no new lines; lines in flight may finish for ${DRAIN_MS / 1000} s, then are reported interrupted (a second signal quits now)\n`,
    );
    run.stop(signal);
  });

const clients: ApiClient[] = [];
function api(options: { throttleTimeoutMs?: number } = {}): ApiClient {
  const { IMPORT_BASE_URL: base, IMPORT_API_KEY: key } = loadClientConfig();
  if (!key) throw new UsageError('set IMPORT_API_KEY (the organisation API key) in the environment');
  const client = new ApiClient(base, key, { ...options, cancelled: run.cancelled });
  clients.push(client);
  return client;
}

/** `--concurrency` and the like: a positive integer written as one (a usage error otherwise). */
function positiveInteger(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a positive integer.');
  return n;
}

function checkInput(file: string): void {
  if (file === '-') return;
  try {
    statSync(file);
  } catch {
    throw new UsageError(`cannot read ${file}`);
  }
}

const program = new Command('import-client')
  .description('Push a cohort of accounts from a JSON Lines file through the import API, with a report')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

program
  .command('validate <file>')
  .description('check every account (on the server, or --offline with the same rules)')
  .option(
    '--offline',
    'validate locally with the service rules (no server; supplier existence is not checked)',
    false,
  )
  .addOption(
    new Option('--region <region>', 'validation profile for --offline')
      .choices(regionNames)
      .default(DEFAULT_REGION),
  )
  .option('--concurrency <n>', 'requests in flight', positiveInteger, 8)
  .option('--report <dir>', 'report folder (default import-report-<UTC timestamp>)')
  .option('--quiet', 'print only the summary', false)
  .action(async (file: string, o: Common & { offline: boolean; region: string; concurrency: number }) => {
    checkInput(file);
    const client = o.offline ? null : api();
    const { report, progress } = startReport(reportDir(o), o, { client });
    const catalogue = buildCatalogue();
    const today = () => new Date().toISOString().slice(0, 10);
    await runLines(
      readJsonLines(file),
      { concurrency: o.offline ? 1 : o.concurrency, stop: run },
      async (line): Promise<Result> => {
        const started = Date.now();
        const who = identify(line.value);
        if (!client) {
          const result = validateAccount(line.value, { region: o.region, catalogue, today: today() });
          return {
            line: line.line,
            ...who,
            outcome: result.ok ? 'dry_run_ok' : 'validation_failed',
            http_status: null,
            kraken_account_number: null,
            errors: result.ok ? [] : result.errors.map(({ code, attr }) => ({ code, attr })),
            attempts: 0,
            ms: Date.now() - started,
          };
        }
        const answer = await client.request('POST', '/v1/data-import/validate-account/', line.text);
        return sentLine(line.line, line.value, answer, started, 'dry_run_ok', fieldErrors);
      },
      report,
      progress,
    );
    await conclude(report, progress, { stopped: run.reason });
  });

program
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
    '--concurrency <n>',
    'accounts in flight (the server still caps creations: 429s are waited out)',
    positiveInteger,
    8,
  )
  .option(
    '--poll-timeout <seconds>',
    "how long one account's status is followed before it ends failed (status_unknown)",
    (v) => Number(v),
    1800,
  )
  .option('--state <path>', 'resume state file (default: import-state.sqlite beside the report)')
  .option('--report <dir>', 'report folder (default import-report-<UTC timestamp>)')
  .option('--quiet', 'print only the summary', false)
  .action(
    async (
      file: string,
      o: Common & {
        team?: string;
        dryRun: boolean;
        mode: 'v1' | 'v2';
        concurrency: number;
        pollTimeout: number;
        state?: string;
      },
    ) => {
      if (o.mode === 'v1' && !o.team) throw new UsageError('v1 needs --team <operations team name>');
      if (!(o.pollTimeout > 0)) throw new UsageError('--poll-timeout must be a positive number of seconds');
      checkInput(file);
      const client = api({ throttleTimeoutMs: o.pollTimeout * 1000 });
      const dir = reportDir(o);
      // Beside the report folder by default: runs that write their reports in one folder share one state.
      const statePath = resolve(o.state ?? join(dirname(dir), 'import-state.sqlite'));
      // Opened before the report is started: a refused state leaves any earlier report as it was.
      const state = new ResumeState(statePath, {
        service: client.baseUrl,
        organisation: await client.organisation(),
        mode: o.mode,
        team: o.team ?? null,
        dry_run: o.dryRun,
      });
      try {
        const { report, progress } = startReport(dir, o, { history: state, client, state: statePath });
        await runLines(
          // v1 sends each line's text as it is: the client never needs the parsed account (see identity.ts).
          readJsonLines(file, { parse: o.mode === 'v2' }),
          { concurrency: o.concurrency, stop: run },
          migrateAccount(client, state, {
            mode: o.mode,
            team: o.team ?? null,
            dryRun: o.dryRun,
            cancelled: run.cancelled,
            pollTimeoutMs: o.pollTimeout * 1000,
          }),
          report,
          progress,
        );
        await conclude(report, progress, { stopped: run.reason });
      } finally {
        state.close();
      }
    },
  );

program
  .command('post-import <kind> <file>')
  .description(
    `send each line as one request body of an import endpoint (${Object.keys(postImportPaths).join(', ')})`,
  )
  .option('--concurrency <n>', 'requests in flight', positiveInteger, 8)
  .option('--report <dir>', 'report folder (default import-report-<UTC timestamp>)')
  .option('--quiet', 'print only the summary', false)
  .action(async (name: string, file: string, o: Common & { concurrency: number }) => {
    if (!Object.hasOwn(postImportPaths, name))
      throw new UsageError(`unknown kind ${name}: one of ${Object.keys(postImportPaths).join(', ')}`);
    const kind = name as PostImportKind;
    checkInput(file);
    const client = api();
    const { report, progress } = startReport(reportDir(o), o, { client });
    await runLines(
      readJsonLines(file),
      { concurrency: o.concurrency, stop: run },
      async (line): Promise<Result> => {
        const started = Date.now();
        const answer = await client.request('POST', postImportPaths[kind], line.text);
        return postImportLine(kind, line.line, line.value, answer, started);
      },
      report,
      progress,
    );
    await conclude(report, progress, { stopped: run.reason });
  });

const collect = (value: string, previous: string[]) => [...previous, value];

program
  .command('reconcile <cohort>')
  .description(
    'compare what each account of a cohort should hold (from the files sent) with what the service holds',
  )
  .option('--transactions <file>', 'a transactions post-import file that was sent (repeatable)', collect, [])
  .option('--billing-documents <file>', 'a billing documents post-import file (repeatable)', collect, [])
  .option('--statements <file>', 'a statements post-import file (repeatable)', collect, [])
  .option('--notes <file>', 'a notes post-import file (repeatable)', collect, [])
  .option('--batch-size <n>', `accounts per request (at most ${MAX_BATCH})`, (v) => Number(v), MAX_BATCH)
  .option('--concurrency <n>', 'batch requests in flight', positiveInteger, 4)
  .option('--report <dir>', 'report folder (default import-report-<UTC timestamp>)')
  .option('--quiet', 'print only the summary', false)
  .action(
    async (
      cohort: string,
      o: Common & {
        transactions: string[];
        billingDocuments: string[];
        statements: string[];
        notes: string[];
        batchSize: number;
        concurrency: number;
      },
    ) => {
      if (!Number.isInteger(o.batchSize) || o.batchSize < 1 || o.batchSize > MAX_BATCH)
        throw new UsageError(`--batch-size must be an integer from 1 to ${MAX_BATCH}`);
      const files = {
        transactions: o.transactions,
        'billing-documents': o.billingDocuments,
        statements: o.statements,
        notes: o.notes,
      };
      for (const file of [cohort, ...Object.values(files).flat()]) checkInput(file);
      if ([cohort, ...Object.values(files).flat()].filter((f) => f === '-').length > 1)
        throw new UsageError('standard input (-) can be read for one file only');
      const client = api();
      // The key is checked before anything is read: a refused key is a usage error, not a cohort of failures.
      await client.organisation();
      const tally = new DifferenceTally();
      const { report, progress } = startReport(reportDir(o), o, {
        client,
        outcomes: reconcileOutcomes,
        extension: tally,
      });
      const { unreadable } = await reconcileCohort(
        client,
        { cohort, files },
        { batchSize: o.batchSize, concurrency: o.concurrency, stop: run.stopped },
        { report, progress, tally },
      );
      await conclude(report, progress, { stopped: run.reason, unreadableInputs: unreadable });
    },
  );

program
  .command('status')
  .description(
    'an import supplier\u2019s cohort progress: accounts by status, skipped, rate, ETA, failures, post-import counts',
  )
  .requiredOption('--supplier <CODE>', 'import supplier code')
  .action(async (o: { supplier: string }) => {
    // One request whatever the cohort's size: the service keeps the counts (GET …/progress/).
    const answer = await api().request(
      'GET',
      `/v2/data-import/import-suppliers/${encodeURIComponent(o.supplier)}/progress/`,
    );
    if (answer.status !== 200)
      throw new UsageError(
        `the server answered ${answer.status} for supplier ${o.supplier}: ${JSON.stringify(answer.body)}`,
      );
    process.stdout.write(JSON.stringify(answer.body, null, 2) + '\n');
  });

try {
  await program.parseAsync(process.argv);
  // Kept-alive connections would keep the process waiting after the work is done.
  await Promise.all(clients.map((c) => c.close()));
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? 0 : 2;
  else if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
}
