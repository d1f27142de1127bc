import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { LedgerLocks } from './ledger-lock.js';

/** Transactions that move the ledger balance; historical ones are already inside `lastStatementBalanceMinor`. */
export const BALANCE_ORIGINS = ['current_statement', 'imported'] as const;

/**
 * Recomputes a ledger's balance from its records, under the ledger lock: the last statement balance plus the
 * signed cents of every transaction that moves the balance. Nothing is incremented, so the balance is always
 * derivable and exact in integer cents. Every import calls this after its inserts, even when it inserted
 * nothing, so a request that crashed between insert and balance write is repaired by the client's retry (or
 * by any later import on the ledger).
 */
export async function recomputeLedgerBalance(models: Models, locks: LedgerLocks, ledgerId: Types.ObjectId): Promise<number> {
  return locks.with(ledgerId, async () => {
    const ledger = await models.Ledger.findById(ledgerId, { lastStatementBalanceMinor: 1 }).lean();
    if (!ledger) throw new Error(`ledger ${ledgerId.toHexString()} vanished`);
    const [agg] = await models.Transaction.aggregate<{ sum: number }>([
      { $match: { ledgerId, origin: { $in: [...BALANCE_ORIGINS] } } },
      { $group: { _id: null, sum: { $sum: '$signedMinor' } } },
    ]);
    const balance = ledger.lastStatementBalanceMinor + (agg?.sum ?? 0);
    await models.Ledger.updateOne({ _id: ledgerId }, { $set: { balanceMinor: balance } });
    return balance;
  });
}
