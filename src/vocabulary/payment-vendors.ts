/** The payment vendors this service has adapters for; a deployment enables some of them (PAYMENT_VENDORS). */
export const paymentVendorNames = ['STRIPE', 'SIMULATED'] as const;

export type PaymentVendorName = (typeof paymentVendorNames)[number];

/** What a vendor needs before it can work: a vendor listed without it is not enabled (it could never answer). */
const requirements: Record<PaymentVendorName, (settings: VendorSettings) => string | null> = {
  STRIPE: (settings) => (settings.STRIPE_API_KEY ? null : 'STRIPE_API_KEY is not set'),
  SIMULATED: () => null,
};

type VendorSettings = { PAYMENT_VENDORS: readonly PaymentVendorName[]; STRIPE_API_KEY?: string | undefined };

/**
 * The vendors clients may name: those PAYMENT_VENDORS lists that are configured. A vendor listed but not
 * configured is left out (a payment instruction naming it is `invalid_choice`, naming the enabled ones), never
 * accepted and then answered with a retryable error that no retry can mend. `left_out` says why, for the boot log.
 */
export function enabledVendors(settings: VendorSettings): {
  enabled: PaymentVendorName[];
  left_out: { vendor: PaymentVendorName; why: string }[];
} {
  const enabled: PaymentVendorName[] = [];
  const leftOut: { vendor: PaymentVendorName; why: string }[] = [];
  for (const vendor of settings.PAYMENT_VENDORS) {
    const why = requirements[vendor](settings);
    if (why) leftOut.push({ vendor, why });
    else enabled.push(vendor);
  }
  return { enabled, left_out: leftOut };
}
