import type { Command } from 'commander';
import { UsageError } from '../http.js';
import { api, helpAfter } from './context.js';

/** `import-client status --supplier <CODE>`: the supplier's cohort progress, in one request. */
export function statusCommand(program: Command): void {
  const command = program
    .command('status')
    .description(
      'an import supplier\u2019s cohort progress: accounts by status, skipped, rate, ETA, failures, post-import counts, and its cohort plan (percent done, projected finish, in the window, the pause)',
    )
    .requiredOption('--supplier <CODE>', 'import supplier code');
  helpAfter(command, {
    success: 'the progress was printed',
    failure: 'the service could not be reached',
    signals: false,
  }).action(status);
}

async function status(o: { supplier: string }): Promise<void> {
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
}
