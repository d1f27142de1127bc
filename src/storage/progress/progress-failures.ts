import type { Logger } from 'pino';

/** A failed update is logged at most once in this long (the others of the burst are counted). */
const FAILURE_LOG_EVERY_MS = 30_000;
/** How often a process tries to mark the suppliers it could not count as stale, once Redis answers again. */
const STALE_RETRY_MS = 1_000;

/**
 * The progress counter updates one process could not make: each is counted, logged once per burst, and its
 * supplier is marked stale once Redis answers again (so that the workers rebuild its counts from the database);
 * the process's tally is then added to the fleet's counter (`progress_counter_failures_total`).
 */
export class CounterFailures {
  /** Updates this process could not make. */
  count = 0;
  private reported = 0;
  private lastLoggedAt = 0;
  private unlogged = 0;
  private readonly dirty = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Pick<Logger, 'warn'> | null,
    /** Marks a supplier's counts stale; adds to the fleet's tally. Both throw while Redis does not answer. */
    private readonly redis: {
      markStale: (supplier: string) => Promise<unknown>;
      addToFleet: (n: number) => Promise<unknown>;
    },
  ) {}

  /** Runs an update; a failure is recorded and answered as null (never thrown: the change is written all the same). */
  async guard<T>(supplier: string, what: string, update: () => Promise<T>): Promise<T | null> {
    try {
      return await update();
    } catch (err) {
      this.failed(supplier, what, err as Error);
      return null;
    }
  }

  /** This process's failures not yet added to the fleet's counter. */
  unreported(): number {
    return this.count - this.reported;
  }

  private failed(supplier: string, what: string, err: Error): void {
    this.count++;
    this.dirty.add(supplier);
    const now = Date.now();
    if (now - this.lastLoggedAt >= FAILURE_LOG_EVERY_MS) {
      this.log?.warn(
        { supplier, update: what, err: err.message, failed_since_last_log: this.unlogged },
        'progress counter update failed: the supplier’s counts will be rebuilt from the database',
      );
      this.lastLoggedAt = now;
      this.unlogged = 0;
    } else this.unlogged++;
    if (!this.timer) {
      this.timer = setInterval(() => void this.markDirtyStale(), STALE_RETRY_MS);
      this.timer.unref();
    }
  }

  private async markDirtyStale(): Promise<void> {
    try {
      for (const supplier of [...this.dirty]) {
        await this.redis.markStale(supplier);
        this.dirty.delete(supplier);
      }
      const unreported = this.unreported();
      if (unreported > 0) {
        await this.redis.addToFleet(unreported);
        this.reported += unreported;
      }
    } catch {
      return; // silent-ok: Redis still does not answer; the next round (STALE_RETRY_MS) tries again
    }
    if (this.dirty.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
