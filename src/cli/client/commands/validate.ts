import { Option, type Command } from 'commander';
import { validateAccount } from '../../../domain/validation/index.js';
import { DEFAULT_REGION, regionNames } from '../../../domain/region/names.js';
import { buildCatalogue } from '../../../vocabulary/catalogue.js';
import { conclude, planFrom, reportDir, startReport, type Common } from '../command-report.js';
import { FixedConcurrency } from '../concurrency.js';
import { identify } from '../identity.js';
import { readJsonLines, type InputLine } from '../input.js';
import { fieldErrors, type Result } from '../outcomes.js';
import { runLines } from '../run.js';
import { sentLine } from '../sent-line.js';
import {
  api,
  checkInput,
  concurrencyOf,
  concurrencyOptions,
  helpAfter,
  reportOptions,
  run,
} from './context.js';

type Options = Common & { offline: boolean; region: string; concurrency: number; adaptive: boolean };

/** `import-client validate <file>`: every account checked on the server, or `--offline` with its rules. */
export function validateCommand(program: Command): void {
  const command = program
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
    );
  reportOptions(concurrencyOptions(command));
  helpAfter(command, {
    success: 'every line is dry_run_ok',
    failure: 'some line is not (validation_failed, failed, parse_error, …)',
    key: true,
  }).action(validate);
}

async function validate(file: string, o: Options): Promise<void> {
  checkInput(file);
  // Offline, one line at a time: validation is CPU in this process, more in flight would gain nothing.
  const concurrency = o.offline ? new FixedConcurrency(1) : concurrencyOf(o);
  const client = o.offline ? null : api({ concurrency });
  const { report, progress } = startReport(reportDir(o), o, {
    client,
    concurrency: o.offline ? undefined : concurrency,
  });
  await planFrom(progress, file);
  const handle = client ? onServer(client) : offline(o.region);
  await runLines(readJsonLines(file), { concurrency, stop: run }, handle, report, progress);
  await conclude(report, progress, { stopped: run.reason });
}

type ReadLine = Extract<InputLine, { ok: true }>;

function onServer(client: ReturnType<typeof api>) {
  return async (line: ReadLine): Promise<Result> => {
    const started = Date.now();
    const answer = await client.request('POST', '/v1/data-import/validate-account/', line.text);
    return sentLine(line.line, line.value, answer, started, 'dry_run_ok', fieldErrors);
  };
}

function offline(region: string) {
  const catalogue = buildCatalogue();
  return async (line: ReadLine): Promise<Result> => {
    const started = Date.now();
    const today = new Date().toISOString().slice(0, 10);
    const result = validateAccount(line.value, { region, catalogue, today });
    return {
      line: line.line,
      ...identify(line.value),
      outcome: result.ok ? 'dry_run_ok' : 'validation_failed',
      http_status: null,
      kraken_account_number: null,
      errors: result.ok ? [] : result.errors.map(({ code, attr }) => ({ code, attr })),
      attempts: 0,
      ms: Date.now() - started,
    };
  };
}
