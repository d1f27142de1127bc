/** The payment vendors this service has adapters for; a deployment enables some of them (PAYMENT_VENDORS). */
export const paymentVendorNames = ['STRIPE', 'SIMULATED'] as const;

export type PaymentVendorName = (typeof paymentVendorNames)[number];
