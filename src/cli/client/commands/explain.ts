import type { Command } from 'commander';
import { UsageError } from '../http.js';
import { api, helpAfter } from './context.js';

type Step = { step: string; at: string; duration_ms: number | null; detail: string };
type Timeline = {
  status: string;
  steps: Step[];
  next: string | null;
  truncated: boolean;
  why: { code: string; detail: string; since: string | null };
};

/** At most this many pages are read (the service bounds a timeline; this only stops a runaway loop). */
const MAX_PAGES = 100;

/**
 * `import-client explain <supplier> <external>`: where one account is, and why: its timeline (GET
 * …/accounts/<code>/<external>/timeline/, every page) as one line per step, then the reason. `--json`: the
 * service's pages joined, as JSON.
 */
export function explainCommand(program: Command): void {
  const command = program
    .command('explain')
    .description(
      'where one account is and why: every step of its migration (stages, schedule, queue, worker, outcome, post-import writes, webhooks) and the reason it is where it is now',
    )
    .argument('<supplier>', 'import supplier code')
    .argument('<external>', 'external account number')
    .option('--json', 'print the timeline as JSON (steps of every page, status, why)');
  helpAfter(command, {
    success: 'the timeline was printed',
    failure: 'the service could not be reached',
    signals: false,
  }).action(explain);
}

async function explain(supplier: string, external: string, o: { json?: boolean }): Promise<void> {
  const path = `/v2/data-import/accounts/${encodeURIComponent(supplier)}/${encodeURIComponent(external)}/timeline/`;
  const steps: Step[] = [];
  let last: Timeline | null = null;
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await api().request('GET', cursor ? `${path}?cursor=${encodeURIComponent(cursor)}` : path);
    if (answer.status !== 200)
      throw new UsageError(
        answer.status === 404
          ? `no import process for ${supplier}/${external} (the server answered 404)`
          : `the server answered ${answer.status} for ${supplier}/${external}: ${JSON.stringify(answer.body)}`,
      );
    last = answer.body as Timeline;
    steps.push(...last.steps);
    cursor = last.next;
    if (!cursor) break;
  }
  const timeline = { ...last!, steps, next: null };
  process.stdout.write(
    o.json ? JSON.stringify(timeline, null, 2) + '\n' : describe(supplier, external, timeline),
  );
}

/** The timeline in words: a line per step (time, step, how long, what), then why. */
function describe(supplier: string, external: string, t: Timeline): string {
  const lines = [`${supplier}/${external}: ${t.status}`];
  const width = Math.max(...t.steps.map((s) => s.step.length), 4);
  for (const s of t.steps) {
    const took = s.duration_ms === null ? '' : ` (${seconds(s.duration_ms)})`;
    lines.push(`  ${s.at}  ${s.step.padEnd(width)}  ${s.detail}${took}`);
  }
  if (t.truncated) lines.push('  … (older steps only: the account has more than the timeline holds)');
  lines.push(`why: ${t.why.code}: ${t.why.detail}${t.why.since ? ` (since ${t.why.since})` : ''}`);
  return lines.join('\n') + '\n';
}

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
