/** Non-personal facts the vendor returns about an instruction (card brand, last four digits, mandate status). */
export type InstructionDetails = Record<string, string | number | boolean | null>;

/**
 * What a vendor says about one reference. `transient` covers timeouts, 5xx, 429 and connection errors: the
 * caller retries those. `not_found` covers missing and unusable instructions: retrying unchanged cannot help.
 */
export type VendorVerdict =
  | { kind: 'found'; details: InstructionDetails }
  | { kind: 'not_found'; reason: string }
  | { kind: 'transient'; reason: string }
  /** The vendor cannot be used at all (not configured, our credentials refused): not retried, answered as 500. */
  | { kind: 'unavailable'; reason: string };

export type InstructionQuery = { reference: string; type: string };

/** One payment vendor. Adapters never throw for vendor answers; they return a verdict. */
export interface PaymentVendor {
  readonly name: string;
  verify(query: InstructionQuery): Promise<VendorVerdict>;
}
