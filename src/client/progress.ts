import { SingleBar } from 'cli-progress';
import type { Outcome } from './outcomes.js';

/**
 * Progress on stderr: on a terminal, a live bar (cli-progress) with counts per outcome, rate and ETA;
 * otherwise one plain line every 5 s (logs of CI jobs and `nohup` runs). `quiet` shows nothing. Lines done in
 * an earlier run (skipped from the resume state) are counted apart and left out of the rate.
 */
export class Progress {
  private bar: SingleBar | null = null;
  private timer: NodeJS.Timeout | null = null;
  private done = 0;
  private sent = 0;
  private doneEarlier = 0;
  private readonly started = Date.now();

  constructor(
    private readonly mode: 'tty' | 'plain' | 'quiet',
    private readonly total: number | null,
    private readonly counts: Record<Outcome, number>,
  ) {
    if (mode === 'tty') {
      this.bar = new SingleBar({
        format: total
          ? '{bar} {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted} | {counts}'
          : '{value} done | {rate}/s | {counts}',
        stream: process.stderr,
        hideCursor: true,
        etaBuffer: 200,
      });
      this.bar.start(total ?? 0, 0, { counts: '', rate: '0' });
    } else if (mode === 'plain') {
      this.timer = setInterval(() => process.stderr.write(this.line() + '\n'), 5_000);
      this.timer.unref();
    }
  }

  /** One line reported; `doneEarlier` when it was skipped as done by an earlier run (not sent). */
  tick(doneEarlier = false): void {
    this.done++;
    if (doneEarlier) this.doneEarlier++;
    else this.sent++;
    this.bar?.update(this.done, { counts: this.countsText(), rate: this.rate() });
  }

  stop(): void {
    this.bar?.stop();
    if (this.timer) clearInterval(this.timer);
  }

  private rate(): string {
    const s = (Date.now() - this.started) / 1000;
    return s > 0 ? (this.sent / s).toFixed(1) : '0';
  }

  private countsText(): string {
    return [
      ...Object.entries(this.counts)
        .filter(([, n]) => n > 0)
        .map(([o, n]) => `${o} ${n}`),
      ...(this.doneEarlier > 0 ? [`done in an earlier run ${this.doneEarlier}`] : []),
    ].join(' · ');
  }

  private line(): string {
    const of = this.total ? `/${this.total}` : '';
    return `[import-client] ${this.done}${of} done, ${this.rate()}/s${this.countsText() ? ` (${this.countsText()})` : ''}`;
  }
}
