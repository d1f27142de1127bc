/**
 * How a run of `import-client` stops before the end of its input: Ctrl-C (SIGINT), SIGTERM, the API key
 * refused mid-run (revoked), or (`migrate`) the window of the supplier's cohort plan ended. At the normal end of the input nothing here fires and every line in flight is
 * waited for, however long: each line is bounded by its own waits (`--poll-timeout`, the retries).
 */

/** Why a run stopped early. */
export type StopReason = 'SIGINT' | 'SIGTERM' | 'key_refused' | 'window_ended';

/** How long the lines in flight may go on after a stop before each of their waits is ended. */
export const DRAIN_MS = 30_000;

/** The exit code of a run that stopped early (documented in docs/client.md, "Exit codes"). */
export const stopExitCodes: Record<StopReason, number> = {
  SIGINT: 130,
  SIGTERM: 143,
  key_refused: 3,
  window_ended: 4,
};

/**
 * Ends a wait of a line that the run no longer waits for (its drain ran out, or it was held by the cohort
 * plan and never sent again): the line ends `interrupted`, its error code `code`.
 */
export class Interrupted extends Error {
  constructor(readonly code = 'interrupted') {
    super('the run stopped before this line finished');
  }
}

/**
 * A stop in two steps: `stopped` when the run stops (no new line is read), `cancelled` `DRAIN_MS` later (every
 * wait of the lines still in flight ends with `Interrupted`). The first reason given is the one kept.
 */
export class RunStop {
  private readonly stopping = new AbortController();
  private readonly cancelling = new AbortController();
  private why: StopReason | null = null;

  constructor(private readonly drainMs = DRAIN_MS) {}

  /** Aborted once the run stops: no new line is read. */
  get stopped(): AbortSignal {
    return this.stopping.signal;
  }

  /** Aborted `DRAIN_MS` after the stop: the lines still in flight are given up (`interrupted`). */
  get cancelled(): AbortSignal {
    return this.cancelling.signal;
  }

  get reason(): StopReason | null {
    return this.why;
  }

  stop(reason: StopReason): void {
    if (this.why) return;
    this.why = reason;
    this.stopping.abort();
    setTimeout(() => this.cancelling.abort(), this.drainMs).unref();
  }
}

/** Waits `ms`; rejects with `Interrupted` when `cancelled` is aborted first. */
export function pause(ms: number, cancelled?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (cancelled?.aborted) return reject(new Interrupted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Interrupted());
    };
    const timer = setTimeout(() => {
      cancelled?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    cancelled?.addEventListener('abort', onAbort, { once: true });
  });
}
