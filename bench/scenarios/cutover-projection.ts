import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { formatUtcDatetime } from '../../src/schemas/primitives.js';
import { creationEnv, SUPPLIER } from '../creation-env.js';
import { percentile, round, type BenchEnv, type Scenario } from '../support.js';
import { startWebAndWorker } from '../web-worker.js';
import { clientRun } from './client.js';

/** The cohort: `BENCH_PROJECTION_ACCOUNTS` realistic accounts (default 2,000, issue 47's rehearsal). */
const ACCOUNTS = Number(process.env.BENCH_PROJECTION_ACCOUNTS ?? 2_000);
/** Rehearsals, each on a service and database of its own: `BENCH_PROJECTION_ROUNDS` (default 2). */
const ROUNDS = Number(process.env.BENCH_PROJECTION_ROUNDS ?? 2);
/** How often the progress body is read (ms). */
const SAMPLE_MS = 1_000;
/** The goal: within ±10 % from 25 % done onwards. */
const FROM_DONE = 0.25;
const LIMIT = 50;

type Sample = { at: number; done: number; projected: number | null; inWindow: boolean | null };

/**
 * Issue 47's rehearsal: a cohort plan declared for ACCOUNTS (a window ending 3 hours on), `import-client migrate`
 * with its default options on a web and a worker process, the progress body read every second; then the actual
 * finish (the last account's PROCESSED or ERRORED event) against every projection made from 25 % done until the
 * last account: the error as a share of the run (first account staged to actual finish) and of the time that was
 * left at the sample. The rule before the fix (the last 5 minutes' count over 5 minutes) is computed from the same
 * samples beside it.
 */
const scenario: Scenario = {
  name: 'cutover-projection',
  description:
    `The cohort plan's projected finish on a rehearsal of ${ACCOUNTS} realistic accounts (import-client migrate, ` +
    `default options, 1 web + 1 worker), sampled every second: its error against the actual finish from ` +
    `${FROM_DONE * 100} % done on, as a share of the run and of the time left; ${ROUNDS} rehearsals`,
  async run(env) {
    const rehearsals: Rehearsal[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      rehearsals.push(await rehearsal(env, `R${r}`));
      const s = rehearsals.at(-1)!;
      console.log(
        `  ${s.tag}: ${s.accounts_per_s} accounts/s over ${s.run_s} s; error of the run: max ${s.of_run.max_pct} %, ` +
          `p90 ${s.of_run.p90_pct} %; of the time left: max ${s.of_left.max_pct} %, p90 ${s.of_left.p90_pct} %`,
      );
    }
    const worst = (k: 'of_run' | 'of_left', f: 'max_pct' | 'p90_pct') =>
      Math.max(...rehearsals.map((s) => s[k][f]));
    return {
      accounts: ACCOUNTS,
      sample_ms: SAMPLE_MS,
      from_done_pct: FROM_DONE * 100,
      goal_pct: 10,
      worst: {
        of_run_max_pct: worst('of_run', 'max_pct'),
        of_run_p90_pct: worst('of_run', 'p90_pct'),
        of_left_max_pct: worst('of_left', 'max_pct'),
        of_left_p90_pct: worst('of_left', 'p90_pct'),
        old_rule_of_run_max_pct: Math.max(...rehearsals.map((s) => s.old_rule.of_run_max_pct)),
      },
      rehearsals,
    };
  },
};
export default scenario;

type Rehearsal = Awaited<ReturnType<typeof rehearsal>>;

async function rehearsal(env: BenchEnv, tag: string) {
  const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
  const e = await creationEnv(config, { workers: false, payload: 'realistic' });
  const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
    .api_key;
  const service = await startWebAndWorker(config);
  const dir = mkdtempSync(join(tmpdir(), 'bench-cutover-projection-'));
  try {
    const { baseUrl } = service;
    const suppliers = `${baseUrl}/v2/data-import/import-suppliers/${SUPPLIER}`;
    const windowEnd = formatUtcDatetime(new Date(Math.ceil((Date.now() + 3 * 3600_000) / 1000) * 1000));
    const put = await fetch(`${suppliers}/plan/`, {
      method: 'PUT',
      headers: e.headers,
      body: JSON.stringify({ expected_accounts: ACCOUNTS, schedule_window_end: windowEnd }),
    });
    if (put.status !== 200) throw new Error(`PUT plan ${put.status}: ${await put.text()}`);

    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const next = Date.now() + SAMPLE_MS;
        const sent = Date.now();
        const res = await fetch(`${suppliers}/progress/`, { headers: e.headers });
        const answered = Date.now();
        const plan = ((await res.json()) as { plan: PlanBody | null }).plan;
        if (plan)
          samples.push({
            at: (sent + answered) / 2,
            done: plan.done,
            projected: plan.projected_finish ? Date.parse(plan.projected_finish) : null,
            inWindow: plan.finishes_in_window,
          });
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      }
    })();
    const load = loadavg()[0]!;
    const launched = Date.now();
    const client = await clientRun(baseUrl, key, e.template, tag, dir, { accounts: ACCOUNTS, args: [] });
    sampling = false;
    await sampler;

    const { start, finish } = await runBounds(e.app.db.models.ImportEvent);
    return {
      tag,
      accounts_per_s: client.rate,
      client_concurrency: client.concurrency,
      run_s: round((finish - start) / 1000, 1),
      client_start_up_s: round((start - launched) / 1000, 1),
      // The machine's 1-minute load average as the rehearsal started and ended (2 cores: above 2, others wait).
      load_average: [round(load, 1), round(loadavg()[0]!, 1)],
      ...judge(samples, start, finish),
    };
  } finally {
    await service.stop();
    await e.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

type PlanBody = { done: number; projected_finish: string | null; finishes_in_window: boolean | null };
type Events = Awaited<ReturnType<typeof creationEnv>>['app']['db']['models']['ImportEvent'];

/** The run's start (its first account staged: CREATED) and actual finish (its last PROCESSED or ERRORED). */
async function runBounds(events: Events) {
  const at = async (states: string[], order: 1 | -1) => {
    const doc = await events
      .findOne({ importSupplier: SUPPLIER, event: { $in: states } }, { occurredAt: 1 })
      .sort({ occurredAt: order })
      .lean();
    if (!doc) throw new Error(`no ${states.join('/')} event`);
    return doc.occurredAt.getTime();
  };
  return { start: await at(['CREATED'], 1), finish: await at(['PROCESSED', 'ERRORED'], -1) };
}

/**
 * Every sample from FROM_DONE of the cohort done until the last account (then the projection is the read's own
 * time, no longer a projection): |projected − actual| over the run (start to actual finish) and over the time
 * left at the sample (the sample to the actual finish, at least a second: the projection's resolution); max and
 * p90, and the max per 5 % of done. A sample without a projection counts as wrong by the whole run.
 */
function judge(samples: Sample[], start: number, finish: number) {
  const run = finish - start;
  const judged = samples
    .filter((s) => s.done >= FROM_DONE * ACCOUNTS && s.done < ACCOUNTS)
    .map((s) => {
      const off = s.projected === null ? run : Math.abs(s.projected - finish);
      // The rule before the fix, on the same counts: a cohort younger than 5 minutes has all its finished
      // accounts in the last 5 minutes, counted over 5 minutes.
      const perMs = s.done / (5 * 60_000);
      const oldOff = Math.abs(s.at + (ACCOUNTS - s.done) / perMs - finish);
      return {
        done_pct: round((s.done / ACCOUNTS) * 100, 1),
        t_s: round((s.at - start) / 1000, 1),
        projected_minus_actual_s: s.projected === null ? null : round((s.projected - finish) / 1000, 1),
        of_run_pct: round((off / run) * 100, 1),
        of_left_pct: round((off / Math.max(1_000, finish - s.at)) * 100, 1),
        old_rule_of_run_pct: round((oldOff / run) * 100, 1),
        in_window: s.inWindow,
      };
    });
  const stats = (k: 'of_run_pct' | 'of_left_pct') => {
    const sorted = judged.map((j) => j[k]).sort((a, b) => a - b);
    return { max_pct: sorted.at(-1) ?? NaN, p90_pct: percentile(sorted, 90) };
  };
  const byFive: Record<string, { samples: number; of_run_max_pct: number; of_left_max_pct: number }> = {};
  for (const j of judged) {
    const from = Math.floor(j.done_pct / 5) * 5;
    const b = (byFive[`${from}-${from + 5}`] ??= { samples: 0, of_run_max_pct: 0, of_left_max_pct: 0 });
    b.samples++;
    b.of_run_max_pct = Math.max(b.of_run_max_pct, j.of_run_pct);
    b.of_left_max_pct = Math.max(b.of_left_max_pct, j.of_left_pct);
  }
  return {
    samples: samples.length,
    judged: judged.length,
    of_run: stats('of_run_pct'),
    of_left: stats('of_left_pct'),
    old_rule: { of_run_max_pct: Math.max(...judged.map((j) => j.old_rule_of_run_pct)) },
    every_sample_in_window: judged.every((j) => j.in_window === true),
    by_5pct_done: byFive,
    judged_samples: judged,
  };
}
