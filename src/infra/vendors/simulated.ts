import { LRUCache } from 'lru-cache';
import type { InstructionQuery, PaymentVendor, VendorVerdict } from './types.js';

/** How many `sim_flaky…` references a process remembers calls for; the oldest is forgotten beyond it. */
export const SIMULATED_REFERENCES_KEPT = 10_000;

/**
 * A vendor for demos and tests that decides by the reference's prefix, like a payment provider's test numbers:
 * `sim_ok…` exists; `sim_flaky…` fails transiently on the first two calls for that reference, then exists;
 * `sim_down…` always fails transiently; `sim_slow…` answers (exists) only after `slowMs`; anything else does not exist.
 * Call counts of flaky references are kept per adapter, for the most recent `referencesKept` references.
 */
export class SimulatedVendor implements PaymentVendor {
  readonly name = 'SIMULATED';
  private readonly flakyCalls: LRUCache<string, number>;

  constructor(
    private readonly slowMs: number,
    referencesKept = SIMULATED_REFERENCES_KEPT,
  ) {
    this.flakyCalls = new LRUCache({ max: referencesKept });
  }

  /** References whose calls are remembered (for tests). */
  get remembered(): number {
    return this.flakyCalls.size;
  }

  async verify({ reference, type }: InstructionQuery): Promise<VendorVerdict> {
    const found: VendorVerdict = { kind: 'found', details: { simulated: true, type } };
    if (reference.startsWith('sim_ok')) return found;
    if (reference.startsWith('sim_flaky')) {
      const calls = (this.flakyCalls.get(reference) ?? 0) + 1;
      this.flakyCalls.set(reference, calls);
      return calls <= 2 ? { kind: 'transient', reason: `simulated transient failure ${calls} of 2` } : found;
    }
    if (reference.startsWith('sim_down')) return { kind: 'transient', reason: 'simulated vendor outage' };
    if (reference.startsWith('sim_slow')) {
      await new Promise((resolve) => setTimeout(resolve, this.slowMs));
      return found;
    }
    return { kind: 'not_found', reason: 'no simulated instruction with this reference' };
  }
}
