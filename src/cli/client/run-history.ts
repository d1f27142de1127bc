import { notAccounts, outcomes, type Outcome } from './outcomes.js';

// The runs of a migration as a report knows them: the record of each run, where they are kept, their totals
// and the throughput chart over all of them.

/** The most bars the throughput chart draws: beyond, the seconds are grouped. */
const MAX_BARS = 600;

/** How a run ended: `unfinished` is a run that never recorded its end (killed, crashed, or still running). */
export type RunEnd = 'completed' | 'interrupted' | 'unfinished';

/** One run, as the history keeps it. Only the lines the run handled itself count in its outcomes and rate. */
export type RunRecord = {
  run: number;
  command: string;
  started_at: string;
  /** Null for an `unfinished` run: its `seconds` then run to its last saved record. */
  finished_at: string | null;
  ended: RunEnd;
  seconds: number;
  /** CPU time the client itself used (user + system), to size the machine it runs on. */
  cpu_seconds: number;
  /** Input lines the run reported: `skipped_done_earlier` + `sent`. */
  lines: number;
  /** Lines not sent: the resume state says an earlier run created them (or found them already imported). */
  skipped_done_earlier: number;
  /** Lines the run handled itself (sent to the service, or found unparsable before sending). */
  sent: number;
  /** Outcomes of the `sent` lines. */
  by_outcome: Record<Outcome, number>;
  /** Accounts (sent lines but parse errors and duplicate lines) per second of the run. */
  accounts_per_s: number;
  server_throttled: number;
  /** Sent lines finished in each second of the run (the chart). */
  throughput: number[];
};

/** Where the runs of one migration are kept (the resume state of `migrate`; see docs/client.md). */
export interface RunHistory {
  /** Records a run that starts; its number. */
  beginRun(record: RunRecord): number;
  /** Replaces the record of run `record.run`. */
  saveRun(record: RunRecord): void;
  /** Every run recorded, oldest first. */
  runs(): RunRecord[];
}

/** Sums over every run: time and CPU spent running, lines sent, their outcomes, the rate over them. */
export type Totals = {
  runs: number;
  started_at: string;
  finished_at: string | null;
  seconds: number;
  cpu_seconds: number;
  sent: number;
  by_outcome: Record<Outcome, number>;
  accounts_per_s: number;
  server_throttled: number;
};

export const zeroCounts = (list: readonly Outcome[] = outcomes) =>
  Object.fromEntries(list.map((o) => [o, 0])) as Record<Outcome, number>;
export const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;
export const rate = (n: number, seconds: number) => (seconds > 0 && n > 0 ? round(n / seconds, 1) : 0);
/** The lines among `counts` that were not an account sent (unparsable, duplicates): not part of the rate. */
export const notAccountCount = (counts: Partial<Record<Outcome, number>>) =>
  [...notAccounts].reduce((n, o) => n + (counts[o] ?? 0), 0);

/** An in-memory history: the report of a command with no resume state knows its own run only. */
export class OneRun implements RunHistory {
  private record: RunRecord | null = null;
  beginRun(record: RunRecord): number {
    this.record = { ...record, run: 1 };
    return 1;
  }
  saveRun(record: RunRecord): void {
    this.record = record;
  }
  runs(): RunRecord[] {
    return this.record ? [this.record] : [];
  }
}

/** Sums over `runs` (the rate: accounts sent in every run over the seconds of every run). */
export function totals(
  runs: readonly Omit<RunRecord, 'throughput'>[],
  list: readonly Outcome[] = outcomes,
): Totals {
  const byOutcome = zeroCounts(list);
  let seconds = 0;
  let cpu = 0;
  let sent = 0;
  let throttled = 0;
  for (const run of runs) {
    seconds += run.seconds;
    cpu += run.cpu_seconds;
    sent += run.sent;
    throttled += run.server_throttled;
    for (const o of list) byOutcome[o] += run.by_outcome[o] ?? 0;
  }
  return {
    runs: runs.length,
    started_at: runs[0]?.started_at ?? '',
    finished_at: runs.at(-1)?.finished_at ?? null,
    seconds: round(seconds, 3),
    cpu_seconds: round(cpu, 2),
    sent,
    by_outcome: byOutcome,
    accounts_per_s: rate(sent - notAccountCount(byOutcome), seconds),
    server_throttled: throttled,
  };
}

/**
 * The throughput chart over every run, one after the other (the time between runs left out): accounts per
 * second, in bars of one second, or of more when the runs are long (at most `MAX_BARS` bars). A run is as long
 * as it ran, so a run that sent nothing is a flat stretch, not a bar at 0 s.
 */
export function timeline(runs: readonly Pick<RunRecord, 'run' | 'seconds' | 'throughput'>[]) {
  const length = (r: (typeof runs)[number]) => Math.max(1, Math.ceil(r.seconds), r.throughput.length);
  const all = runs.reduce((n, r) => n + length(r), 0);
  const step = Math.max(1, Math.ceil(all / MAX_BARS));
  const bars: { run: number; at: string; rate: number }[] = [];
  for (const r of runs) {
    const seconds = length(r);
    for (let from = 0; from < seconds; from += step) {
      const to = Math.min(seconds, from + step);
      let n = 0;
      for (let s = from; s < to; s++) n += r.throughput[s] ?? 0;
      bars.push({ run: r.run, at: clock(from), rate: round(n / (to - from), 2) });
    }
  }
  return { step, bars };
}

/** Seconds as `42 s`, `3:05` or `1:02:05`. */
function clock(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(seconds % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}
