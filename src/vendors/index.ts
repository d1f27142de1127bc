import type { Config } from '../config.js';
import { SimulatedVendor } from './simulated.js';
import { StripeVendor } from './stripe.js';
import type { PaymentVendorName } from './names.js';
import type { PaymentVendor } from './types.js';

export type { InstructionDetails, InstructionQuery, PaymentVendor, VendorVerdict } from './types.js';

const unconfigured = (name: string, why: string): PaymentVendor => ({
  name,
  verify: async () => ({ kind: 'unavailable', reason: why }),
});

const adapters: Record<PaymentVendorName, (config: Config, now: () => Date) => PaymentVendor> = {
  STRIPE: (config, now) =>
    config.STRIPE_API_KEY
      ? new StripeVendor({
          apiKey: config.STRIPE_API_KEY,
          apiBase: config.STRIPE_API_BASE,
          timeoutMs: config.PAYMENT_VENDOR_TIMEOUT_MS,
          now,
        })
      : unconfigured('STRIPE', 'STRIPE_API_KEY is not set'),
  // The simulated slow vendor answers only once the API has stopped waiting.
  SIMULATED: (config) => new SimulatedVendor(config.PAYMENT_VERIFICATION_WAIT_MS + 1_000),
};

/** The adapters a deployment enables (PAYMENT_VENDORS), built once per process from its config. */
export function buildVendors(config: Config, now: () => Date): ReadonlyMap<string, PaymentVendor> {
  return new Map(config.PAYMENT_VENDORS.map((name) => [name, adapters[name](config, now)]));
}
