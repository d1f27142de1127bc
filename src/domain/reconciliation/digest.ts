import { hash } from 'node:crypto';

/**
 * A ledger's transaction digest: order-independent, so the legacy side computes it without sorting and the
 * service keeps it up to date as entries are appended (one addition per transaction, never a re-read).
 *
 * For each transaction, the SHA-256 of the UTF-8 text `<ledger_code>\t<transaction_id>\t<signed cents>`,
 * read as a 256-bit big-endian unsigned integer; the digest is the sum of those integers modulo 2^256,
 * written as 64 lowercase hex digits. A ledger without transactions has 64 zeros.
 * Signed cents: an integer (no decimal point, "-" for negatives), the balance convention of `vocabulary/money.ts`.
 */

const MODULUS = 1n << 256n;
const MASK = MODULUS - 1n;

export const EMPTY_DIGEST = '0'.repeat(64);

/** One transaction's term of the sum. */
export function transactionTerm(
  ledgerCode: string,
  transactionId: string,
  signedCents: bigint | number,
): bigint {
  // The one-shot hash: about 1.5 µs per transaction with the conversion, against 3.8 with a Hash object.
  return BigInt(`0x${hash('sha256', `${ledgerCode}\t${transactionId}\t${signedCents}`, 'hex')}`);
}

/** A running digest: start from a stored one (or empty), add transactions, read it back as hex. */
export class DigestAccumulator {
  private sum: bigint;

  constructor(digestHex: string = EMPTY_DIGEST) {
    this.sum = BigInt(`0x${digestHex}`);
  }

  add(ledgerCode: string, transactionId: string, signedCents: bigint | number): this {
    this.sum = (this.sum + transactionTerm(ledgerCode, transactionId, signedCents)) & MASK;
    return this;
  }

  get hex(): string {
    return this.sum.toString(16).padStart(64, '0');
  }
}

/** The digest of a whole set of transactions of one ledger. */
export function ledgerDigest(
  ledgerCode: string,
  transactions: Iterable<{ transactionId: string; signedCents: bigint | number }>,
): string {
  const acc = new DigestAccumulator();
  for (const t of transactions) acc.add(ledgerCode, t.transactionId, t.signedCents);
  return acc.hex;
}
