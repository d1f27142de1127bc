import type { Config } from '../config.js';
import { SimulatedVendor } from './simulated.js';
import { StripeVendor } from './stripe.js';
import type { PaymentVendor } from './types.js';

export type { InstructionDetails, InstructionQuery, PaymentVendor, VendorVerdict } from './types.js';

const unconfigured = (name: string, why: string): PaymentVendor => ({
  name,
  verify: async () => ({ kind: 'unavailable', reason: why }),
});

/** The adapters of a deployment, built once per process from its config. */
export function buildVendors(config: Config, now: () => Date): ReadonlyMap<string, PaymentVendor> {
  const stripe = config.STRIPE_API_KEY
    ? new StripeVendor({
        apiKey: config.STRIPE_API_KEY,
        apiBase: config.STRIPE_API_BASE,
        timeoutMs: config.PAYMENT_VENDOR_TIMEOUT_MS,
        now,
      })
    : unconfigured('STRIPE', 'STRIPE_API_KEY is not set');
  // The simulated slow vendor answers only once the API has stopped waiting.
  const simulated = new SimulatedVendor(config.PAYMENT_VERIFICATION_WAIT_MS + 1_000);
  return new Map<string, PaymentVendor>([
    ['STRIPE', stripe],
    ['SIMULATED', simulated],
  ]);
}
