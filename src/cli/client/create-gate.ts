import type { Answer } from './http.js';
import { Interrupted } from './stop.js';

/**
 * Paces v1 creates on the service's own figure: every create answer carries `X-Creation-Share`, the creation
 * slots the caller's organisation may hold now (the whole limit when it is alone, its weighted part when others
 * create too; docs/api.md, "Fair share"). The client keeps at most that many creates in flight, so that it is not
 * refused for the creation limit and the lines in flight (`concurrency.ts`) can run their stages ahead: a line
 * staged while the creates are full waits here, on the client, where waiting costs the service nothing.
 *
 * Before the first answer nothing is known and nothing waits. Two clients of one organisation each pace on the
 * whole share: the service then refuses the excess (429), which the lines' controller hears as before.
 */
export class CreateGate {
  private share = Infinity;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  /** The most creates that waited here at once, for the summary. */
  private peakWaiting = 0;

  /** Waits for room for one create; a run that gives its lines up ends the wait (`Interrupted`). */
  async enter(cancelled?: AbortSignal): Promise<void> {
    while (this.inFlight >= this.share) {
      if (cancelled?.aborted) throw new Interrupted();
      this.peakWaiting = Math.max(this.peakWaiting, this.waiting.length + 1);
      await new Promise<void>((resolve) => {
        const wake = () => {
          cancelled?.removeEventListener('abort', wake);
          resolve();
        };
        cancelled?.addEventListener('abort', wake, { once: true });
        this.waiting.push(wake);
      });
    }
    this.inFlight++;
  }

  /** One create answered; `share`: its `X-Creation-Share` (null: the answer had none, nothing changes). */
  leave(share: number | null): void {
    this.inFlight--;
    if (share !== null && share >= 1) this.share = share;
    for (let room = this.share - this.inFlight; room > 0 && this.waiting.length > 0; room--)
      this.waiting.shift()!();
  }

  /** Sends one create through the gate: waits for room, sends, and leaves with the answer's share. */
  async through(send: () => Promise<Answer>, cancelled?: AbortSignal): Promise<Answer> {
    await this.enter(cancelled);
    let share: number | null = null;
    try {
      const answer = await send();
      share = answer.creationShare;
      return answer;
    } finally {
      this.leave(share);
    }
  }

  summary() {
    return {
      creation_share: Number.isFinite(this.share) ? this.share : null,
      creates_waited_peak: this.peakWaiting,
    };
  }
}
