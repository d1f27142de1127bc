import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { diffReports } from '../diff/classify.js';
import { diffPage } from '../diff/diff-page.js';
import { resultsPath } from '../diff/results-file.js';
import { DiffTally } from '../diff/tally.js';
import { helpAfter } from './context.js';

/** `import-client diff <reportA> <reportB>`: each account across two runs, classified. */
export function diffCommand(program: Command): void {
  const command = program
    .command('diff <reportA> <reportB>')
    .description(
      'compare two runs (report folders or their results.jsonl): fixed, still failing, newly failing, only in one',
    )
    .option('--report <dir>', 'where diff.jsonl and diff.html go (default import-diff-<UTC timestamp>)');
  helpAfter(command, {
    success: 'no account is newly failing or newly mismatched in B',
    failure: 'some account is newly failing or newly mismatched in B',
    server: false,
    signals: false,
  }).action(diff);
}

async function diff(reportA: string, reportB: string, o: { report?: string }): Promise<void> {
  const paths = { a: resolve(resultsPath(reportA)), b: resolve(resultsPath(reportB)) };
  const dir = resolve(o.report ?? `import-diff-${stamp()}`);
  mkdirSync(dir, { recursive: true });
  const out = createWriteStream(join(dir, 'diff.jsonl'));
  const tally = new DiffTally();
  await diffReports(paths.a, paths.b, (d) => {
    tally.add(d);
    out.write(JSON.stringify(d) + '\n');
  });
  await new Promise<void>((done, fail) => out.end((err?: Error | null) => (err ? fail(err) : done())));
  const summary = tally.summary({ report: dir, ...paths });
  writeFileSync(join(dir, 'diff-summary.json'), JSON.stringify(summary, null, 2) + '\n');
  const json = JSON.stringify({ summary, accounts: tally.listed }).replaceAll('<', '\\u003c');
  writeFileSync(join(dir, 'diff.html'), diffPage(json));
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  process.exitCode = summary.counts.newly_failing + summary.counts.newly_mismatched > 0 ? 1 : 0;
}

const stamp = () =>
  new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
