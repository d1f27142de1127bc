import type { Types } from 'mongoose';
import type { Transaction } from '../schemas/transaction.js';
import type { TransactionsImport } from '../schemas/post-import.js';
import { ledgerOf, withLedger, type JournalHead } from '../storage/journal-state.js';
import {
  noteKey,
  storedTransaction,
  transactionKey,
  type LedgerJournal,
  type LedgerState,
  type StoredTransaction,
} from '../storage/ledger-journal.js';
import type { Models } from '../models/index.js';
import { BALANCE_ORIGINS } from '../domain/reconciliation/origins.js';
import { formatCents, MONEY_LIMIT_TEXT, withinMoneyLimit } from '../domain/money.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport } from './events.js';
import { addRedatingNote } from './notes.js';
import { ledgerNotFound, type Refusal } from './outcomes.js';
import type { PostImportTarget } from './target.js';

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

/** Transactions that move the ledger balance (shared with reconciliation's expected side). */
export { BALANCE_ORIGINS } from '../domain/reconciliation/origins.js';

export type TransactionImport = {
  accountId: Types.ObjectId;
  ledgerCode: string | undefined;
  transactions: readonly Transaction[];
  raws: readonly RawTransaction[];
  checkPreviouslyAdded: boolean;
  forceAddToCurrentStatement: boolean;
  dryRun: boolean;
};

export type TransactionImportOutcome =
  | { ok: true; results: TransactionResult[] }
  | { ok: false; error: TransactionImportError }
  | { ok: false; refusal: Refusal };

type Planned = { index: number; record: StoredTransaction; echo: RawTransaction; redated: boolean };
type Plan =
  | { ok: true; results: (TransactionResult | null)[]; toWrite: Planned[]; ledger: LedgerState }
  | { ok: false; error: TransactionImportError }
  | { ok: false; refusal: Refusal };

/** The ledger balance leaves the bound within which money is held exactly (`domain/money.ts`). */
function balanceOutOfRange(ledgerCode: string, index: number, balanceMinor: number): Plan {
  const detail = `This transaction would take the balance of ledger ${ledgerCode} to ${formatCents(BigInt(balanceMinor))}, beyond ${MONEY_LIMIT_TEXT} either side of zero.`;
  return {
    ok: false,
    refusal: {
      code: 'request_failed_validation',
      errors: [{ detail, code: 'amount_out_of_range', attr: `transactions.${index}.amount` }],
    },
  };
}

/**
 * Decides the fate of every transaction against the journal's head, before anything is written: already on
 * the account (skipped, or an error without `check_previously_added`), dated before the open statement
 * period (re-dated into it when forced, else an error). The first error stops the whole batch. Pure.
 */
function plan(head: JournalHead, ledger: LedgerState, input: TransactionImport): Plan {
  const openStart = ledger.openPeriodStart;
  const results: (TransactionResult | null)[] = [];
  const toWrite: Planned[] = [];
  // Each amount and the balance stay within the money bound, so every sum here is an exact number of cents.
  let balance = ledger.balanceMinor;
  const moves = (record: StoredTransaction): boolean => {
    if (BALANCE_ORIGINS.has(record.origin)) balance += record.signedMinor;
    return withinMoneyLimit(balance);
  };
  for (const [index, t] of input.transactions.entries()) {
    const raw = input.raws[index] ?? {};
    const fail = (detail: string): Plan => ({
      ok: false,
      error: { status: TRANSACTION_IMPORT_ERROR, error_detail: detail, transaction_data: raw },
    });
    // (Ids repeated inside one request are refused by validation, before this.)
    if (head.keys.has(transactionKey(t.transaction_id))) {
      if (!input.checkPreviouslyAdded)
        return fail(`Transaction ${t.transaction_id} already exists on the account.`);
      results.push({ status: TRANSACTION_ALREADY_EXISTS, transaction_data: raw });
      continue;
    }
    results.push(null);
    if (openStart !== null && t.transaction_date < openStart) {
      if (!input.forceAddToCurrentStatement) {
        return fail(
          `Transaction ${t.transaction_id} is dated ${t.transaction_date}, before the open statement period of ledger ${ledger.code}, which starts on ${openStart}.`,
        );
      }
      const explanation = `Originally dated ${t.transaction_date}; re-dated to ${openStart}, the first day of the open statement period, on import.`;
      const note = t.note ? `${t.note} (${explanation})` : explanation;
      const record = storedTransaction(ledger.code, t, raw, 'imported', {
        transactionDate: openStart,
        originalTransactionDate: t.transaction_date,
        note,
      });
      if (!moves(record)) return balanceOutOfRange(ledger.code, index, balance);
      toWrite.push({ index, record, echo: { ...raw, transaction_date: openStart, note }, redated: true });
      continue;
    }
    const record = storedTransaction(ledger.code, t, raw, 'imported');
    if (!moves(record)) return balanceOutOfRange(ledger.code, index, balance);
    toWrite.push({ index, record, echo: raw, redated: false });
  }
  return { ok: true, results, toWrite, ledger };
}

function added(p: Extract<Plan, { ok: true }>): TransactionResult[] {
  const results = [...p.results];
  for (const w of p.toWrite)
    results[w.index] = { status: TRANSACTION_ADDED_TO_ACCOUNT, transaction_data: w.echo };
  return results as TransactionResult[];
}

/**
 * Imports a batch of transactions onto one ledger as one journal entry: the plan is made against the head
 * the entry is appended after (a concurrent import that appended first is seen, and its transactions count
 * as existing), and the ledger balance moves by exactly what the entry adds. A failing plan writes nothing.
 * The re-dating note (keyed by the re-dated ids, so a retry finds or writes exactly one) is written before
 * the entry; a dry run answers what the import would give and writes nothing.
 */
export async function importTransactions(
  models: Models,
  journal: LedgerJournal,
  locks: AccountLocks,
  input: TransactionImport,
  now: Date,
): Promise<TransactionImportOutcome> {
  const run = () =>
    journal.append<TransactionImportOutcome>(
      input.accountId,
      async (head) => {
        const ledger = ledgerOf(head, input.ledgerCode);
        if (!ledger) return { write: null, result: { ok: false, refusal: ledgerNotFound(input.ledgerCode) } };
        const p = plan(head, ledger, input);
        if (!p.ok) return { write: null, result: p };
        if (input.dryRun || p.toWrite.length === 0)
          return { write: null, result: { ok: true, results: added(p) } };
        const redated = p.toWrite.filter((w) => w.redated).map((w) => w.record.transactionId);
        // The note is written first and counted by this entry (its key), as notes are (see `importNotes`).
        const notes =
          redated.length > 0 ? [await addRedatingNote(models, input.accountId, ledger, redated, now)] : [];
        const delta = p.toWrite.reduce(
          (sum, w) => (BALANCE_ORIGINS.has(w.record.origin) ? sum + w.record.signedMinor : sum),
          0,
        );
        return {
          write: {
            kind: 'transactions',
            ledgers: withLedger(head, { ...ledger, balanceMinor: ledger.balanceMinor + delta }),
            keys: [...p.toWrite.map((w) => transactionKey(w.record.transactionId)), ...notes.map(noteKey)],
            records: { transactions: p.toWrite.map((w) => w.record) },
          },
          result: { ok: true, results: added(p) },
        };
      },
      now,
    );
  const outcome = input.dryRun ? await run() : await locks.with(input.accountId, run);
  return outcome ?? { ok: false, refusal: ledgerNotFound(input.ledgerCode) };
}

/** The query flags of a transactions import (both default to true). */
export type TransactionsImportOptions = {
  checkPreviouslyAdded: boolean;
  forceAddToCurrentStatement: boolean;
};

/**
 * The transactions step: the batch imported onto the target account under its lock, then its event (a dry
 * run writes nothing and publishes nothing). Added or already there, every transaction of the batch is on
 * the account, so the event counts them all (see `publishPostImport`).
 */
export async function runTransactionsImport(
  ctx: PostImportContext,
  target: PostImportTarget<TransactionsImport>,
  options: TransactionsImportOptions,
): Promise<TransactionImportOutcome> {
  const { account, data, request } = target;
  const dryRun = data.dry_run === true;
  const outcome = await importTransactions(
    ctx.models,
    ctx.storage.journal,
    ctx.locks,
    {
      accountId: account._id,
      ledgerCode: data.ledger_code,
      transactions: data.transactions,
      raws: (request.body as { transactions: RawTransaction[] }).transactions,
      checkPreviouslyAdded: options.checkPreviouslyAdded,
      forceAddToCurrentStatement: options.forceAddToCurrentStatement,
      dryRun,
    },
    ctx.clock(),
  );
  if (outcome.ok && !dryRun)
    await publishPostImport(ctx, target, {
      resource: 'transactions',
      count: outcome.results.length,
      repeatable: true,
    });
  return outcome;
}
