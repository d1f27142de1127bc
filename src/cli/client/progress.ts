import { SingleBar } from 'cli-progress';
import type { Concurrency } from './concurrency.js';
import type { Outcome } from './outcomes.js';

/** How often the plain line is written (logs of CI jobs and `nohup` runs). */
const PLAIN_EVERY_MS = 5_000;
/** How often the bar is redrawn even when no line ended (the elapsed time, a total just counted). */
const REDRAW_MS = 1_000;
/** The rate (and so the ETA) is of the lines that ended in this last stretch of time. */
const RATE_WINDOW_MS = 10_000;
const BAR_WIDTH = 30;

/**
 * Progress on stderr that plans: the total of lines (counted from the file as the run starts, see
 * `countLines`; unknown for standard input, where the counts and rate are what can be known), the percentage,
 * the rate over the last 10 s, the ETA at that rate, counts per outcome, and (adaptive concurrency) the lines
 * in flight allowed now. On a terminal a live bar (cli-progress), redrawn every second; otherwise one plain
 * line every 5 s and one at the end; nothing when `quiet`. Lines done in an earlier run (skipped from the
 * resume state) are counted apart; they take no time, so they leave the rate as soon as they leave its window.
 */
export class Progress {
  private bar: SingleBar | null = null;
  private timer: NodeJS.Timeout | null = null;
  private total: number | null = null;
  private done = 0;
  private doneEarlier = 0;
  private readonly started = Date.now();
  /** (time, lines done) a few times a second: the rate's window. */
  private readonly samples: [number, number][] = [];

  constructor(
    private readonly mode: 'tty' | 'plain' | 'quiet',
    private readonly counts: Record<Outcome, number>,
    private readonly concurrency: Concurrency | null = null,
  ) {
    if (mode === 'tty') {
      this.bar = new SingleBar({
        format: () => this.text(true),
        stream: process.stderr,
        hideCursor: true,
        fps: 4,
      });
      this.bar.start(1, 0);
      this.timer = setInterval(() => this.redraw(), REDRAW_MS);
    } else if (mode === 'plain')
      this.timer = setInterval(() => process.stderr.write(this.text(false) + '\n'), PLAIN_EVERY_MS);
    this.timer?.unref();
  }

  /** The number of lines the run will report, once known. */
  plan(total: number): void {
    this.total = total;
    this.redraw();
  }

  /** One line reported; `doneEarlier` when it was skipped as done by an earlier run (not sent). */
  tick(doneEarlier = false): void {
    this.done++;
    if (doneEarlier) this.doneEarlier++;
    const now = Date.now();
    const last = this.samples.at(-1);
    if (!last || now - last[0] >= 250) this.samples.push([now, this.done]);
    else last[1] = this.done;
    while (this.samples.length > 2 && now - this.samples[1]![0] > RATE_WINDOW_MS) this.samples.shift();
    this.redraw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    // The plain line once more at the end: a run shorter than its period would otherwise show none.
    if (this.mode === 'plain') process.stderr.write(this.text(false) + '\n');
    if (this.bar) {
      this.redraw();
      this.bar.stop();
    }
  }

  private redraw(): void {
    this.bar?.update(this.done);
  }

  /** Lines a second over the rate's window (null before two samples). */
  rate(now = Date.now()): number | null {
    const first = this.samples[0];
    if (!first || this.done === 0) return null;
    // From the window's first sample, or the start while the run is younger than the window.
    const [t0, n0] = now - this.started <= RATE_WINDOW_MS ? [this.started, 0] : first;
    const seconds = (now - t0) / 1000;
    return seconds > 0 ? (this.done - n0) / seconds : null;
  }

  /** The progress as one line: with a bar on a terminal. */
  text(withBar: boolean): string {
    const rate = this.rate();
    const parts: string[] = [];
    if (this.total !== null) {
      const fraction = this.total > 0 ? Math.min(1, this.done / this.total) : 1;
      const filled = Math.round(fraction * BAR_WIDTH);
      if (withBar) parts.push('█'.repeat(filled) + '░'.repeat(BAR_WIDTH - filled));
      parts.push(`${(fraction * 100).toFixed(1)}%`, `${this.done}/${this.total}`);
    } else parts.push(`${this.done} done`);
    parts.push(rate === null ? '–/s' : `${rate.toFixed(1)}/s`);
    if (this.total !== null) parts.push(`ETA ${eta(this.total - this.done, rate)}`);
    parts.push(`elapsed ${duration((Date.now() - this.started) / 1000)}`);
    if (this.concurrency) parts.push(`in flight ≤ ${this.concurrency.limit}`);
    const counts = this.countsText();
    const line = parts.join(' | ') + (counts ? ` | ${counts}` : '');
    return withBar ? line : `[import-client] ${line}`;
  }

  private countsText(): string {
    return [
      ...Object.entries(this.counts)
        .filter(([, n]) => n > 0)
        .map(([o, n]) => `${o} ${n}`),
      ...(this.doneEarlier > 0 ? [`done in an earlier run ${this.doneEarlier}`] : []),
    ].join(' · ');
  }
}

/** The time left at `rate`, or `–` while there is no rate yet. */
function eta(remaining: number, rate: number | null): string {
  if (remaining <= 0) return '0s';
  if (rate === null || rate <= 0) return '–';
  return duration(remaining / rate);
}

/** Seconds as `42s`, `3m05s` or `2h07m`. */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
