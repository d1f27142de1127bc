/**
 * How many lines a command keeps in flight. `FixedConcurrency` (`--no-adaptive`): always `--concurrency`.
 * `AdaptiveConcurrency` (the default): starts low and finds the service's pace from what it answers, with
 * `--concurrency` as the ceiling. It hears every answer the client gets (see `ApiClient`'s `observe`):
 *
 * - **refusals** (429, 503): the number in flight is cut by 30 % at once, and no new line starts before the
 *   `Retry-After` the service asked for (the refused request itself waits it out too, see http.ts). One cut per
 *   overshoot: a refusal of a request sent before the cut, or of a request refused before and sent again (the
 *   overshoot's own, while the lines in flight come down to the new number), cuts no more; a new request
 *   refused after the cut cuts again;
 * - **windows** of as many answers as lines in flight, counting only requests sent since the number last
 *   changed (an answer to a request sent at an earlier level says nothing of this one: a window of quick
 *   stages whose creates are still out would otherwise pass a level its creates never tried): when one ends
 *   without a refusal, the number grows: it
 *   doubles until the first sign of load (slow start), then grows by one a window; unless the answers of the
 *   window took on average over `LATENCY_TOLERANCE` times the usual time of their kind of request (the
 *   lowest running mean seen of that method and path: a stage and a create differ a hundredfold): requests
 *   queue on the service, so the number holds. Latency never cuts: on this service throughput still rises
 *   while latency does (the creation queue works more accounts at once), and only its 429s say "too many".
 *
 * Additive growth after the first sign means the service's limit is crossed by one line at a time, and the level
 * it refused at last is probed again only after `PROBE_WINDOWS` clean windows just below it. A refusal in the
 * first window one line above a level found clean steps back that one line, not 30 %; when that level is the one
 * refused before, the next probe waits twice as many windows (up to `MAX_PROBE_WINDOWS`): against a service whose
 * limit holds, refusals become rarer the longer the run. A refusal at a level that had passed a clean window (the
 * service's capacity fell) is cut by 30 % and probing starts over (the share of refused requests is in the summary).
 */

export interface Concurrency {
  /** How many lines may be in flight now. */
  readonly limit: number;
  /** How long no new line may start (a `Retry-After` the service asked for), in ms from now. */
  holdMs(): number;
  /**
   * Hears one answer of the service: `kind` the request's method and path (without the account's part),
   * `retryAfterMs` when it asked the client to wait, `resent` when the request was refused before and is sent
   * again as the service asked.
   */
  observe(status: number, ms: number, retryAfterMs: number | null, kind?: string, resent?: boolean): void;
  /** What the summary says of it. */
  summary(): Record<string, unknown>;
}

/** A share of requests in percent, two decimals. */
const pct = (n: number, of: number) => (of > 0 ? Math.round((n / of) * 10_000) / 100 : 0);
const isRefusal = (status: number) => status === 429 || status === 503;

export class FixedConcurrency implements Concurrency {
  private requests = 0;
  private refused = 0;
  constructor(readonly limit: number) {}
  holdMs(): number {
    return 0;
  }
  observe(status: number): void {
    this.requests++;
    if (isRefusal(status)) this.refused++;
  }
  summary() {
    const { requests, refused } = this;
    return { mode: 'fixed', limit: this.limit, requests, refused, refused_pct: pct(refused, requests) };
  }
}

/** Answers this many times slower than usual for their kind, on average over a window, are queueing. */
export const LATENCY_TOLERANCE = 8;
/** The cut after a refusal (429, 503). */
const REFUSAL_FACTOR = 0.7;
/** The weight of a new answer in the running mean of its kind. */
const EWMA_WEIGHT = 0.2;
/** Answers of a kind before its running mean counts as its usual time. */
const KIND_SAMPLES = 4;
/** Fewer answers than this are not a window (a mean of two is noise). */
const MIN_WINDOW = 8;
/** Clean windows at a level just below the last refused one before it is probed again (each probe costs refusals). */
export const PROBE_WINDOWS = 4;
/** The most clean windows between two probes (each refused probe doubles the wait, from PROBE_WINDOWS). */
export const MAX_PROBE_WINDOWS = 32;
/** Where the adaptive limit starts. */
export const INITIAL_LIMIT = 4;

export class AdaptiveConcurrency implements Concurrency {
  private current: number;
  private slowStart = true;
  /** The answers since the number last changed. */
  private window = { answers: 0, slowness: 0, weighed: 0 };
  /** The last change was one line up from a level found clean, and no window has passed at it since. */
  private steppedUp = false;
  /** When the number last changed, and when it was last cut (the clock of `now`). */
  private changedAt = -Infinity;
  private cutAt = -Infinity;
  /** Per kind of request: its running mean and the lowest it has been (its usual time). */
  private readonly kinds = new Map<string, { n: number; meanMs: number; usualMs: number }>();
  private holdUntil = 0;
  /** The level the service last refused at, and the clean windows since just below it. */
  private refusedAt = Infinity;
  private cleanBelow = 0;
  /** Clean windows just below `refusedAt` before the next probe. */
  private probeWindows = PROBE_WINDOWS;
  private readonly stats = { requests: 0, refused: 0, peak: 0, cuts: 0, held: 0, sumLimit: 0 };

  constructor(
    readonly ceiling: number,
    private readonly now: () => number = Date.now,
  ) {
    this.current = Math.min(INITIAL_LIMIT, ceiling);
    this.stats.peak = this.current;
  }

  get limit(): number {
    return this.current;
  }

  holdMs(): number {
    return Math.max(0, this.holdUntil - this.now());
  }

  observe(status: number, ms: number, retryAfterMs: number | null, kind = '', resent = false): void {
    this.stats.requests++;
    this.stats.sumLimit += this.current;
    const sentAt = this.now() - ms;
    if (isRefusal(status)) return this.refused(retryAfterMs, sentAt, resent);
    const slowness = this.weigh(kind, ms);
    if (sentAt < this.changedAt) return;
    this.window.answers++;
    if (slowness !== null) {
      this.window.slowness += slowness;
      this.window.weighed++;
    }
    if (this.window.answers >= Math.max(MIN_WINDOW, this.current)) this.endWindow();
  }

  /** How many times its kind's usual time an answer took (null while the kind has too few answers). */
  private weigh(kind: string, ms: number): number | null {
    const k = this.kinds.get(kind) ?? { n: 0, meanMs: ms, usualMs: Infinity };
    this.kinds.set(kind, k);
    const slowness = k.n >= KIND_SAMPLES ? ms / Math.max(k.usualMs, 1) : null;
    k.n++;
    k.meanMs += EWMA_WEIGHT * (ms - k.meanMs);
    if (k.n >= KIND_SAMPLES) k.usualMs = Math.min(k.usualMs, k.meanMs);
    return slowness;
  }

  private refused(retryAfterMs: number | null, sentAt: number, resent: boolean): void {
    this.stats.refused++;
    if (retryAfterMs !== null) this.holdUntil = Math.max(this.holdUntil, this.now() + retryAfterMs);
    // One cut per overshoot: a request sent before the cut, or one refused before and sent again (the
    // overshoot's own requests, while the lines in flight come down to the new number), cuts no more.
    if (sentAt < this.cutAt || resent) return;
    // Refused in the first window one line above a level found clean: that line was one too many.
    const stepBack = !this.slowStart && this.steppedUp;
    // The level refused before, tried again: the next try waits longer.
    const again = stepBack && this.current >= this.refusedAt;
    this.slowStart = false;
    this.probeWindows = again ? Math.min(this.probeWindows * 2, MAX_PROBE_WINDOWS) : PROBE_WINDOWS;
    this.refusedAt = this.current;
    this.cleanBelow = 0;
    this.set(stepBack ? this.current - 1 : Math.floor(this.current * REFUSAL_FACTOR));
    this.cutAt = this.now();
    this.stats.cuts++;
  }

  private endWindow(): void {
    const { slowness, weighed } = this.window;
    this.window = { answers: 0, slowness: 0, weighed: 0 };
    this.steppedUp = false;
    if (weighed > 0 && slowness / weighed > LATENCY_TOLERANCE) {
      this.slowStart = false;
      this.stats.held++;
      return;
    }
    if (this.slowStart) return this.set(this.current * 2);
    // Just below where the service last said "too many", it is probed again only after a few clean windows: a
    // service whose limit is fixed is crossed a few times as seldom, and one whose capacity grew is found all
    // the same.
    if (this.current + 1 >= this.refusedAt && ++this.cleanBelow < this.probeWindows) return;
    this.cleanBelow = 0;
    this.set(this.current + 1);
    this.steppedUp = true;
  }

  private set(limit: number): void {
    const next = Math.max(1, Math.min(this.ceiling, limit));
    if (next !== this.current) {
      this.changedAt = this.now();
      this.window = { answers: 0, slowness: 0, weighed: 0 };
    }
    this.current = next;
    this.stats.peak = Math.max(this.stats.peak, this.current);
  }

  summary() {
    const { requests, refused, peak, cuts, held, sumLimit } = this.stats;
    return {
      mode: 'adaptive',
      ceiling: this.ceiling,
      final: this.current,
      peak,
      mean: requests > 0 ? Math.round((sumLimit / requests) * 10) / 10 : this.current,
      cuts,
      held_for_latency: held,
      requests,
      refused,
      refused_pct: pct(refused, requests),
    };
  }
}
