import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';

/** Transactions that move the ledger balance; historical ones are already inside `lastStatementBalanceMinor`. */
export const BALANCE_ORIGINS = ['current_statement', 'imported'] as const;

const MAX_ROUNDS = 100;

/**
 * Recomputes a ledger's balance from its records: the last statement balance plus the signed cents of every
 * transaction that moves the balance. The write is conditional on `balanceVersion` being unchanged since it
 * was read (before summing), so a sum taken before another request's insert can never overwrite a newer one;
 * the loser re-reads and sums again. Every import calls this after its inserts, even when it inserted nothing,
 * so a request that crashed between insert and balance write is repaired by the client's retry (or any later
 * import on the ledger). The balance is therefore always derivable and exact in integer cents.
 */
export async function recomputeLedgerBalance(models: Models, ledgerId: Types.ObjectId): Promise<number> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const ledger = await models.Ledger.findById(ledgerId, { balanceVersion: 1, lastStatementBalanceMinor: 1 }).lean();
    if (!ledger) throw new Error(`ledger ${ledgerId.toHexString()} vanished`);
    const [agg] = await models.Transaction.aggregate<{ sum: number }>([
      { $match: { ledgerId, origin: { $in: [...BALANCE_ORIGINS] } } },
      { $group: { _id: null, sum: { $sum: '$signedMinor' } } },
    ]);
    const balance = ledger.lastStatementBalanceMinor + (agg?.sum ?? 0);
    const version = ledger.balanceVersion;
    // Always written (even when equal): skipping would let an older, stale sum win with the same version.
    const res = await models.Ledger.updateOne(
      { _id: ledgerId, balanceVersion: version ?? { $exists: false } },
      { $set: { balanceMinor: balance, balanceVersion: (version ?? 0) + 1 } },
    );
    if (res.matchedCount === 1) return balance;
  }
  throw new Error(`ledger ${ledgerId.toHexString()}: balance write kept losing to concurrent writers`);
}
