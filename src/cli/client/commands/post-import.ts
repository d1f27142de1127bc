import type { Command } from 'commander';
import { conclude, planFrom, reportDir, startReport, type Common } from '../command-report.js';
import { UsageError } from '../http.js';
import { readJsonLines } from '../input.js';
import type { Result } from '../outcomes.js';
import { runLines } from '../run.js';
import { postImportLine, postImportPaths, type PostImportKind } from '../sent-line.js';
import {
  api,
  checkInput,
  concurrencyOf,
  concurrencyOptions,
  helpAfter,
  reportOptions,
  run,
} from './context.js';

const kinds = Object.keys(postImportPaths).join(', ');

/** `import-client post-import <kind> <file>`: each line one request body of that import endpoint. */
export function postImportCommand(program: Command): void {
  const command = program
    .command('post-import <kind> <file>')
    .description(`send each line as one request body of an import endpoint (${kinds})`);
  reportOptions(concurrencyOptions(command));
  helpAfter(command, {
    success: 'every line is created or already_imported',
    failure: 'some line is not',
    key: true,
  }).action(postImport);
}

async function postImport(
  name: string,
  file: string,
  o: Common & { concurrency: number; adaptive: boolean },
): Promise<void> {
  if (!Object.hasOwn(postImportPaths, name)) throw new UsageError(`unknown kind ${name}: one of ${kinds}`);
  const kind = name as PostImportKind;
  checkInput(file);
  const concurrency = concurrencyOf(o);
  const client = api({ concurrency });
  const { report, progress } = startReport(reportDir(o), o, { client, concurrency });
  await planFrom(progress, file);
  await runLines(
    readJsonLines(file),
    { concurrency, stop: run },
    async (line): Promise<Result> => {
      const started = Date.now();
      const answer = await client.request('POST', postImportPaths[kind], line.text);
      return postImportLine(kind, line.line, line.value, answer, started);
    },
    report,
    progress,
  );
  await conclude(report, progress, { stopped: run.reason });
}
