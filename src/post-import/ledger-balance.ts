import { randomUUID } from 'node:crypto';
import type { Types } from 'mongoose';
import type { Ledger } from '../models/ledger.js';
import type { Models } from '../models/index.js';
import type { LedgerLocks } from './ledger-lock.js';
import { insertIgnoringDuplicates } from './target.js';

/** Transactions that move the ledger balance; historical ones are already inside `lastStatementBalanceMinor`. */
export const BALANCE_ORIGINS: readonly string[] = ['current_statement', 'imported'];

export type LockedLedger = Ledger & { _id: Types.ObjectId };

/**
 * Runs `fn` holding the ledger lock, with the ledger as read under it. First finishes a balance change that a
 * crashed import left in the ledger's journal: the transactions it lists that carry its batch were inserted
 * by it, so their total is applied and the journal cleared in one write. Every read is by `_id`.
 */
export async function withLedger<T>(
  models: Models,
  locks: LedgerLocks,
  ledgerId: Types.ObjectId,
  fn: (ledger: LockedLedger) => Promise<T>,
): Promise<T> {
  return locks.with(ledgerId, async () => {
    const ledger = await models.Ledger.findById(ledgerId).lean<LockedLedger>();
    if (!ledger) throw new Error(`ledger ${ledgerId.toHexString()} vanished`);
    if (ledger.journal) {
      const { batch, transactionIds } = ledger.journal;
      const found = await Promise.all(
        transactionIds.map((id) =>
          models.Transaction.findById(id, { signedMinor: 1, origin: 1, batch: 1 }).lean(),
        ),
      );
      const delta = found.reduce(
        (sum, t) =>
          t && t.batch === batch && BALANCE_ORIGINS.includes(t.origin) ? sum + t.signedMinor : sum,
        0,
      );
      ledger.balanceMinor += delta;
      ledger.journal = null;
      await models.Ledger.updateOne(
        { _id: ledgerId },
        { $set: { balanceMinor: ledger.balanceMinor, journal: null } },
      );
    }
    return fn(ledger);
  });
}

/**
 * Inserts transactions that move the balance, inside `withLedger`: the journal (batch id and the ids about to
 * be inserted) is written first, then the transactions (tagged with the batch; existing ones are skipped),
 * then the total of those actually inserted is added and the journal cleared in one write. A crash at any
 * point leaves either nothing or a journal the next lock holder finishes, so balances stay exact integer
 * cents without reading the ledger's other transactions. Returns the indexes inserted.
 */
export async function insertMovingBalance(
  models: Models,
  ledger: LockedLedger,
  records: readonly { _id: Types.ObjectId; signedMinor: number; origin: string }[],
): Promise<Set<number>> {
  if (records.length === 0) return new Set();
  const batch = randomUUID();
  await models.Ledger.updateOne(
    { _id: ledger._id },
    { $set: { journal: { batch, transactionIds: records.map((r) => r._id) } } },
  );
  const inserted = await insertIgnoringDuplicates(
    models.Transaction,
    records.map((r) => ({ ...r, batch })),
  );
  const delta = records.reduce(
    (sum, r, i) => (inserted.has(i) && BALANCE_ORIGINS.includes(r.origin) ? sum + r.signedMinor : sum),
    0,
  );
  ledger.balanceMinor += delta;
  ledger.journal = null;
  await models.Ledger.updateOne(
    { _id: ledger._id },
    { $set: { balanceMinor: ledger.balanceMinor, journal: null } },
  );
  return inserted;
}
