import Stripe from 'stripe';
import type { InstructionQuery, PaymentVendor, VendorVerdict } from './types.js';

export type StripeVendorOptions = { apiKey: string; apiBase?: string; timeoutMs: number; now: () => Date };

/** Stripe through its official SDK: CARD references are payment methods, DIRECT_DEBIT references are mandates. */
export class StripeVendor implements PaymentVendor {
  readonly name = 'STRIPE';
  private readonly client: Stripe;

  constructor(private readonly options: StripeVendorOptions) {
    const base = options.apiBase ? new URL(options.apiBase) : null;
    this.client = new Stripe(options.apiKey, {
      // Retries belong to the job (bounded by the API's wait), not to the SDK.
      maxNetworkRetries: 0,
      timeout: options.timeoutMs,
      telemetry: false,
      ...(base && {
        protocol: base.protocol === 'http:' ? ('http' as const) : ('https' as const),
        host: base.hostname,
        port: base.port || (base.protocol === 'https:' ? 443 : 80),
      }),
    });
  }

  async verify({ reference, type }: InstructionQuery): Promise<VendorVerdict> {
    try {
      if (type === 'CARD') return this.card(await this.client.paymentMethods.retrieve(reference));
      if (type === 'DIRECT_DEBIT') return this.mandate(await this.client.mandates.retrieve(reference));
      return { kind: 'not_found', reason: `STRIPE has no instructions of type ${type}` };
    } catch (err) {
      return classify(err);
    }
  }

  private card(pm: Stripe.PaymentMethod): VendorVerdict {
    if (pm.type !== 'card' || !pm.card)
      return { kind: 'not_found', reason: `payment method is of type ${pm.type}, not card` };
    const { brand, last4, exp_month: month, exp_year: year } = pm.card;
    const now = this.options.now();
    const expired =
      year < now.getUTCFullYear() || (year === now.getUTCFullYear() && month < now.getUTCMonth() + 1);
    if (expired) return { kind: 'not_found', reason: 'the card has expired' };
    return { kind: 'found', details: { brand, last4, exp_month: month, exp_year: year } };
  }

  private mandate(m: Stripe.Mandate): VendorVerdict {
    if (m.status !== 'active') return { kind: 'not_found', reason: `the mandate is ${m.status}` };
    return {
      kind: 'found',
      details: { status: m.status, payment_method_type: m.payment_method_details?.type ?? null },
    };
  }
}

function classify(err: unknown): VendorVerdict {
  const e = err as { type?: string; statusCode?: number; code?: string; message?: string };
  const reason = `${e.type ?? 'Error'}${e.statusCode ? ` ${e.statusCode}` : ''}: ${e.code ?? e.message ?? 'unknown'}`;
  if (e.type === 'StripeInvalidRequestError' && (e.statusCode === 404 || e.statusCode === 400))
    return { kind: 'not_found', reason };
  if (e.type === 'StripeAuthenticationError' || e.type === 'StripePermissionError')
    return { kind: 'unavailable', reason };
  // Timeouts and connection errors, 429 and 5xx: worth another try.
  return { kind: 'transient', reason };
}
