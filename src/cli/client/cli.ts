#!/usr/bin/env node
import { createRequire } from 'node:module';
import { Command, CommanderError } from 'commander';
import { UsageError } from './http.js';
import { closeClients, onSignals } from './commands/context.js';
import { diffCommand } from './commands/diff.js';
import { explainCommand } from './commands/explain.js';
import { migrateCommand } from './commands/migrate.js';
import { postImportCommand } from './commands/post-import.js';
import { reconcileCommand } from './commands/reconcile.js';
import { statusCommand } from './commands/status.js';
import { startClientTracing, stopClientTracing } from './tracing.js';
import { validateCommand } from './commands/validate.js';

/**
 * `import-client`: pushes a cohort from a JSON Lines file through the public HTTP API, with progress, a
 * resumable state file and a report. Server and key from the environment (IMPORT_BASE_URL, IMPORT_API_KEY),
 * never from flags. Exit codes: 0 every line succeeded, 1 some did not, 2 usage, 3 the key was refused during
 * the run, 130 after Ctrl-C (SIGINT), 143 after SIGTERM (each command's --help says which it can end with).
 */

// The package's version: package.json sits three folders up from both src/cli/client and dist/cli/client.
const { version } = createRequire(import.meta.url)('../../../package.json') as { version: string };

onSignals();

const program = new Command('import-client')
  .description('Push a cohort of accounts from a JSON Lines file through the import API, with a report')
  .version(version, '-V, --version', 'print the version')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) })
  .addHelpText(
    'after',
    [
      '',
      'Environment: IMPORT_BASE_URL (the service, default http://127.0.0.1:3000), IMPORT_API_KEY (the key).',
      'Exit codes: 0 success, 1 some line did not succeed, 2 usage, 3 key refused mid-run, 130 SIGINT, 143 SIGTERM.',
      "Run 'import-client <command> --help' for a command's options, environment and exit codes.",
    ].join('\n'),
  );
for (const add of [
  validateCommand,
  migrateCommand,
  postImportCommand,
  statusCommand,
  explainCommand,
  reconcileCommand,
  diffCommand,
])
  add(program);

try {
  await startClientTracing();
  await program.parseAsync(process.argv);
  await closeClients();
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? 0 : 2;
  else if (err instanceof UsageError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exitCode = 1;
  }
} finally {
  await stopClientTracing();
}
