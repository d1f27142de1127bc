import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { categories, type Category } from '../../src/cli/client/diff/classify.js';
import type { FieldError, Outcome, Result } from '../../src/cli/client/outcomes.js';
import { round, type Scenario } from '../support.js';

const LINES = Number(process.env.BENCH_DIFF_LINES ?? 100_000);
/** Accounts only in A (the first ones) and only in B (after A's last): half a percent of a report each. */
const ONLY = Math.max(1, Math.round(LINES * 0.005));
const GOAL_S = 30;
const TIME = '/usr/bin/time';
const root = resolve(import.meta.dirname, '../..');

/** How a failing account fails: the error codes and paths a real run writes, over a few outcomes. */
type Failure = { outcome: Outcome; http_status: number; errors: FieldError[] };
const FAILURES: Failure[] = [
  {
    outcome: 'validation_failed',
    http_status: 400,
    errors: [{ code: 'invalid_postcode', attr: 'billing_postcode' }],
  },
  {
    outcome: 'validation_failed',
    http_status: 400,
    errors: [
      { code: 'required', attr: 'meters.0.mpan' },
      { code: 'invalid_date', attr: 'meters.0.supply_start_date' },
    ],
  },
  { outcome: 'failed', http_status: 500, errors: [{ code: 'internal_error', attr: 'non_field_errors' }] },
  {
    outcome: 'supplier_closed',
    http_status: 400,
    errors: [{ code: 'import_supplier_migration_not_ongoing', attr: 'non_field_errors' }],
  },
];

/** Run A: 3 accounts in 100 fail, the failure taken in turn from FAILURES by hundred. */
function failureInA(i: number): Failure | null {
  return i % 100 < 3 ? FAILURES[Math.floor(i / 100) % FAILURES.length]! : null;
}

/**
 * Run B: two of A's three in 100 fixed; the third still failing (a quarter of those with another failure);
 * one account in 500 that succeeded in A newly failing.
 */
function failureInB(i: number): Failure | null {
  const k = Math.floor(i / 100);
  if (i % 100 === 2) return FAILURES[(k % 4 === 0 ? k + 1 : k) % FAILURES.length]!;
  if (i % 100 === 50 && k % 5 === 0) return FAILURES[k % FAILURES.length]!;
  return null;
}

/** What `diff` must find for account i (A holds 0 … LINES-1, B holds ONLY … LINES+ONLY-1), from the model. */
function expectedCategory(i: number): Category {
  if (i < ONLY) return 'only_in_a';
  if (i >= LINES) return 'only_in_b';
  const a = failureInA(i);
  const b = failureInB(i);
  if (!a) return b ? 'newly_failing' : 'still_ok';
  if (!b) return 'fixed';
  return a === b ? 'still_failing_same_code' : 'still_failing_changed_code';
}

/** A results.jsonl line as `migrate` writes it. */
function resultLine(line: number, i: number, failure: Failure | null): string {
  const result: Result = {
    line,
    import_supplier: `DIFF_SUP_${i % 3}`,
    external_account_number: `D-${String(i).padStart(8, '0')}`,
    outcome: failure?.outcome ?? 'created',
    http_status: failure?.http_status ?? 201,
    kraken_account_number: failure ? null : `A-${(0x10000000 + i).toString(16).toUpperCase()}`,
    errors: failure?.errors ?? [],
    attempts: 1,
    ms: 40 + (i % 90),
  };
  return JSON.stringify(result) + '\n';
}

/** A report folder holding the results of accounts `from` … `from + LINES - 1`. */
function writeReport(dir: string, from: number, failure: (i: number) => Failure | null): string {
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  for (let n = 0; n < LINES; n++) lines.push(resultLine(n + 1, from + n, failure(from + n)));
  writeFileSync(join(dir, 'results.jsonl'), lines.join(''));
  return dir;
}

function expectedCounts(): Record<Category, number> {
  const counts = Object.fromEntries(categories.map((c) => [c, 0])) as Record<Category, number>;
  for (let i = 0; i < LINES + ONLY; i++) counts[expectedCategory(i)]++;
  return counts;
}

/**
 * `import-client diff A B` as a child process (from the build when the bench built it, else through tsx): its
 * wall time, peak RSS (GNU time's maximum resident set where there is one, else VmHWM sampled from /proc)
 * and what it printed.
 */
async function runDiff(a: string, b: string, out: string, timeFile: string) {
  const client =
    process.env.CHILD_FROM_BUILD === '1'
      ? ['dist/cli/client/cli.js']
      : ['--import', 'tsx', 'src/cli/client/cli.ts'];
  const node = [process.execPath, ...client, 'diff', a, b, '--report', out];
  const withTime = existsSync(TIME);
  const [command, ...args] = withTime ? [TIME, '-f', '%M', '-o', timeFile, ...node] : node;
  const started = performance.now();
  const proc = spawn(command!, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  let hwmKb = 0;
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
      hwmKb = Math.max(hwmKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      // silent-ok: the process has exited between two samples; the last one stands
    }
  }, 50);
  const code = await new Promise<number | null>((done) => proc.on('close', done));
  clearInterval(timer);
  const seconds = (performance.now() - started) / 1000;
  const peakKb = withTime ? Number(readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)) : hwmKb;
  return { code, stdout, seconds, peakMb: peakKb / 1024, rssFrom: withTime ? 'GNU time %M' : 'VmHWM' };
}

const mb = (path: string) => round(statSync(path).size / 1024 / 1024, 1);

/**
 * `import-client diff` of two synthetic reports of LINES results each, no server: A with 3% of its accounts
 * failing over four outcomes and error codes, B with two thirds of those fixed, the rest still failing (some
 * with another code), 0.2% newly failing, and half a percent of accounts only in A and only in B. Wall time
 * and peak RSS of the client; the counts it prints must be the model's. Goal: at most 30 s.
 */
const scenario: Scenario = {
  name: 'client-diff',
  description: `import-client diff of two reports of ${LINES.toLocaleString('en')} results each (synthetic, ~3% failing in A), wall time and peak RSS`,
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'bench-client-diff-'));
    try {
      const a = writeReport(join(dir, 'A'), 0, failureInA);
      const b = writeReport(join(dir, 'B'), ONLY, failureInB);
      const expected = expectedCounts();
      const out = join(dir, 'diff');
      const r = await runDiff(a, b, out, join(dir, 'time.txt'));
      const wantCode = expected.newly_failing + expected.newly_mismatched > 0 ? 1 : 0;
      if (r.code !== wantCode) throw new Error(`import-client diff exited ${r.code} (expected ${wantCode})`);
      const summary = JSON.parse(r.stdout) as { accounts: number; counts: Record<Category, number> };
      const wrong = categories.filter((c) => summary.counts[c] !== expected[c]);
      if (wrong.length > 0 || summary.accounts !== LINES + ONLY)
        throw new Error(
          `diff counts differ from the model: got ${JSON.stringify(summary.counts)} (${summary.accounts} accounts), expected ${JSON.stringify(expected)} (${LINES + ONLY})`,
        );
      return {
        lines_per_report: LINES,
        accounts: summary.accounts,
        report_mb: { a: mb(join(a, 'results.jsonl')), b: mb(join(b, 'results.jsonl')) },
        seconds: round(r.seconds, 2),
        peak_rss_mb: round(r.peakMb, 1),
        rss_from: r.rssFrom,
        goal_s: GOAL_S,
        within_goal: r.seconds <= GOAL_S,
        counts: summary.counts,
        counts_match: true,
        diff_jsonl_mb: mb(join(out, 'diff.jsonl')),
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default scenario;
