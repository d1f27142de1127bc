import type { Types } from 'mongoose';
import { signedAmount, toMinor } from '../domain/money.js';
import { accountLedgersModel } from '../models/ledger.js';
import type { Models } from '../models/index.js';
import type { transactionOrigins } from '../models/transaction.js';
import type { Transaction } from '../schemas/transaction.js';
import { ApiError } from '../api/errors.js';
import { addRedatingNote } from './notes.js';
import { insertMovingBalance, withLedger, type LockedLedger } from './ledger-balance.js';
import type { LedgerLocks } from './ledger-lock.js';
import { ledgerIdFor, transactionIdFor } from '../models/record-ids.js';
import { insertIgnoringDuplicates } from './target.js';

export type LedgerDoc = LockedLedger;
type RawTransaction = Record<string, unknown>;

export const TRANSACTION_ADDED_TO_ACCOUNT = 'TRANSACTION_ADDED_TO_ACCOUNT';
export const TRANSACTION_ALREADY_EXISTS = 'TRANSACTION_ALREADY_EXISTS';
export const TRANSACTION_IMPORT_ERROR = 'TRANSACTION_IMPORT_ERROR';

export type TransactionResult = {
  status: typeof TRANSACTION_ADDED_TO_ACCOUNT | typeof TRANSACTION_ALREADY_EXISTS;
  transaction_data: RawTransaction;
};
export type TransactionImportError = {
  status: typeof TRANSACTION_IMPORT_ERROR;
  error_detail: string;
  transaction_data: RawTransaction;
};

/**
 * An account's ledger codes in payload order. Read by `_id` from `account_ledgers`; the first request for an
 * account writes it from one query on the account's ledgers (they all exist once the account is imported,
 * and never change, so concurrent writers write the same and the loser's duplicate key is harmless).
 */
export async function accountLedgerCodes(models: Models, accountId: Types.ObjectId): Promise<string[]> {
  const AccountLedgers = accountLedgersModel(models.Ledger.db);
  const known = await AccountLedgers.findById(accountId).lean();
  if (known) return known.codes;
  const ledgers = await models.Ledger.find({ accountId }, { ledgerCode: 1, position: 1 })
    .sort({ position: 1 })
    .lean();
  const codes = ledgers.map((l) => l.ledgerCode);
  await insertIgnoringDuplicates(AccountLedgers, [{ _id: accountId, codes }]);
  return codes;
}

/** The ledger named in the body, else the account's first ledger (by position in the account payload). */
export async function findLedger(
  models: Models,
  accountId: Types.ObjectId,
  ledgerCode: string | undefined,
): Promise<LedgerDoc> {
  const code = ledgerCode ?? (await accountLedgerCodes(models, accountId))[0];
  const ledger =
    code === undefined ? null : await models.Ledger.findById(ledgerIdFor(accountId, code)).lean<LedgerDoc>();
  if (!ledger) {
    throw new ApiError('ledger_not_found', {
      errors: ledgerCode
        ? [
            {
              detail: `The account has no ledger ${ledgerCode}.`,
              code: 'ledger_not_found',
              attr: 'ledger_code',
            },
          ]
        : [],
    });
  }
  return ledger;
}

/** The stored form of one transaction: exact amount text, signed cents, and the payload as received. */
export function transactionRecord(
  accountId: Types.ObjectId,
  ledgerId: Types.ObjectId,
  t: Transaction,
  raw: RawTransaction,
  origin: (typeof transactionOrigins)[number],
  extra: {
    transactionDate?: string;
    originalTransactionDate?: string | null;
    note?: string | null;
    billingDocumentId?: Types.ObjectId;
  } = {},
) {
  return {
    _id: transactionIdFor(accountId, t.transaction_id),
    accountId,
    ledgerId,
    transactionId: t.transaction_id,
    transactionDate: extra.transactionDate ?? t.transaction_date,
    originalTransactionDate: extra.originalTransactionDate ?? null,
    type: t.type,
    amount: t.amount,
    signedMinor: toMinor(signedAmount(t.type, t.amount).toFixed(2)),
    origin,
    billingDocumentId: extra.billingDocumentId ?? null,
    note: extra.note !== undefined ? extra.note : (t.note ?? null),
    data: JSON.stringify(raw),
  };
}

type Options = { checkPreviouslyAdded: boolean; forceAddToCurrentStatement: boolean };
type Planned = {
  index: number;
  record: ReturnType<typeof transactionRecord>;
  echo: RawTransaction;
  redated: boolean;
};
export type TransactionPlan =
  | { ok: true; results: (TransactionResult | null)[]; toWrite: Planned[] }
  | { ok: false; error: TransactionImportError };

/**
 * Decides the fate of every transaction before anything is written: already on the account (skipped, or an
 * error without `check_previously_added`), dated before the open statement period (re-dated into it when
 * forced, else an error). The first error stops the whole batch.
 */
export async function planTransactions(
  models: Models,
  accountId: Types.ObjectId,
  ledger: LedgerDoc,
  transactions: readonly Transaction[],
  raws: readonly RawTransaction[],
  options: Options,
): Promise<TransactionPlan> {
  const found = await Promise.all(
    transactions.map((t) =>
      models.Transaction.findById(transactionIdFor(accountId, t.transaction_id), { _id: 1 }).lean(),
    ),
  );
  const existing = new Set(transactions.filter((_, i) => found[i]).map((t) => t.transaction_id));
  const openStart = ledger.openPeriodStart ?? null;
  const results: (TransactionResult | null)[] = [];
  const toWrite: Planned[] = [];
  for (const [index, t] of transactions.entries()) {
    const raw = raws[index] ?? {};
    const fail = (detail: string): TransactionPlan => ({
      ok: false,
      error: { status: TRANSACTION_IMPORT_ERROR, error_detail: detail, transaction_data: raw },
    });
    if (existing.has(t.transaction_id)) {
      if (!options.checkPreviouslyAdded)
        return fail(`Transaction ${t.transaction_id} already exists on the account.`);
      results.push({ status: TRANSACTION_ALREADY_EXISTS, transaction_data: raw });
      continue;
    }
    results.push(null);
    if (openStart !== null && t.transaction_date < openStart) {
      if (!options.forceAddToCurrentStatement) {
        return fail(
          `Transaction ${t.transaction_id} is dated ${t.transaction_date}, before the open statement period of ledger ${ledger.ledgerCode}, which starts on ${openStart}.`,
        );
      }
      const explanation = `Originally dated ${t.transaction_date}; re-dated to ${openStart}, the first day of the open statement period, on import.`;
      const note = t.note ? `${t.note} (${explanation})` : explanation;
      const record = transactionRecord(accountId, ledger._id, t, raw, 'imported', {
        transactionDate: openStart,
        originalTransactionDate: t.transaction_date,
        note,
      });
      toWrite.push({ index, record, echo: { ...raw, transaction_date: openStart, note }, redated: true });
      continue;
    }
    toWrite.push({
      index,
      record: transactionRecord(accountId, ledger._id, t, raw, 'imported'),
      echo: raw,
      redated: false,
    });
  }
  return { ok: true, results, toWrite };
}

/**
 * Imports a batch holding the ledger lock from the plan to the balance: the plan (existence checks, open
 * period) is made against the ledger as it is under the lock, so concurrent identical requests see each
 * other's transactions and agree on one re-dating note. Then the pinned note (keyed by the re-dated ids, so
 * a retry after a crash still finds or writes exactly one), then the transactions, with duplicate-key errors
 * reported as already existing, and the balance moved by exactly what was inserted (`insertMovingBalance`).
 * A failing plan writes nothing. The lock is taken even when nothing is new, so a client's retry repairs what
 * a crashed attempt left.
 */
export async function importTransactions(
  models: Models,
  locks: LedgerLocks,
  accountId: Types.ObjectId,
  ledgerId: Types.ObjectId,
  transactions: readonly Transaction[],
  raws: readonly RawTransaction[],
  options: Options,
  now: Date,
): Promise<{ ok: true; results: TransactionResult[] } | { ok: false; error: TransactionImportError }> {
  return withLedger(models, locks, ledgerId, async (ledger) => {
    const plan = await planTransactions(models, accountId, ledger, transactions, raws, options);
    if (!plan.ok) return plan;
    const redated = plan.toWrite.filter((p) => p.redated);
    if (redated.length > 0) {
      const ids = redated.map((p) => p.record.transactionId);
      const shown =
        ids.length > 20 ? `${ids.slice(0, 20).join(', ')} and ${ids.length - 20} more` : ids.join(', ');
      const body =
        `${ids.length} imported transaction(s) on ledger ${ledger.ledgerCode} were dated before its open statement period and ` +
        `were re-dated to ${ledger.openPeriodStart}: ${shown}. Each transaction's note records its original date.`;
      await addRedatingNote(models, accountId, ledger._id, body, ids, now);
    }
    const inserted = await insertMovingBalance(
      models,
      ledger,
      plan.toWrite.map((p) => p.record),
    );
    const results = [...plan.results];
    plan.toWrite.forEach((p, i) => {
      results[p.index] = inserted.has(i)
        ? { status: TRANSACTION_ADDED_TO_ACCOUNT, transaction_data: p.echo }
        : { status: TRANSACTION_ALREADY_EXISTS, transaction_data: p.echo };
    });
    return { ok: true as const, results: results as TransactionResult[] };
  });
}

/** What a dry run reports: the statuses the import would give, with nothing written. */
export function dryRunResults(plan: Extract<TransactionPlan, { ok: true }>): TransactionResult[] {
  const results = [...plan.results];
  for (const p of plan.toWrite)
    results[p.index] = { status: TRANSACTION_ADDED_TO_ACCOUNT, transaction_data: p.echo };
  return results as TransactionResult[];
}
