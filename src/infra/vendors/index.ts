import type { Config } from '../../config.js';
import { SimulatedVendor } from './simulated.js';
import { StripeVendor } from './stripe.js';
import { enabledVendors, type PaymentVendorName } from '../../vocabulary/payment-vendors.js';
import type { PaymentVendor } from './types.js';

const adapters: Record<PaymentVendorName, (config: Config, now: () => Date) => PaymentVendor> = {
  // Only built when enabled, i.e. configured (see `enabledVendors`).
  STRIPE: (config, now) =>
    new StripeVendor({
      apiKey: config.STRIPE_API_KEY ?? '',
      apiBase: config.STRIPE_API_BASE,
      timeoutMs: config.PAYMENT_VENDOR_TIMEOUT_MS,
      now,
    }),
  // The simulated slow vendor answers only once the API has stopped waiting.
  SIMULATED: (config) => new SimulatedVendor(config.PAYMENT_VERIFICATION_WAIT_MS + 1_000),
};

/** The adapters a deployment enables (PAYMENT_VENDORS, configured), built once per process from its config. */
export function buildVendors(config: Config, now: () => Date): ReadonlyMap<string, PaymentVendor> {
  return new Map(enabledVendors(config).enabled.map((name) => [name, adapters[name](config, now)]));
}
