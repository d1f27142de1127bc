import type { Types } from 'mongoose';
import type { Transaction } from '../../schemas/transaction.js';
import type { TransactionsImport } from '../../schemas/post-import.js';
import {
  ledgerOf,
  withLedger,
  type Decision,
  type JournalHead,
} from '../../storage/journal/journal-state.js';
import { noteKey, transactionKey } from '../../storage/journal/journal-figures.js';
import {
  storedTransaction,
  type LedgerState,
  type StoredTransaction,
} from '../../storage/journal/journal-records.js';
import { BALANCE_ORIGINS } from '../../vocabulary/transaction-origins.js';
import { formatCents, MONEY_LIMIT_TEXT, withinMoneyLimit } from '../../vocabulary/money.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport, requestKey, writeRef, type Written } from './events.js';
import {
  ensureRedatingNote,
  redatingNoteOf,
  writeRedatingNote,
  type NoteStorage,
  type RedatingNote,
} from './notes.js';
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

export type TransactionImport = {
  accountId: Types.ObjectId;
  ledgerCode: string | undefined;
  transactions: readonly Transaction[];
  raws: readonly RawTransaction[];
  checkPreviouslyAdded: boolean;
  forceAddToCurrentStatement: boolean;
  dryRun: boolean;
};

/**
 * `written`: what the batch's journal entry added, when there is one (written now, or by an earlier attempt
 * of the same batch), for its event; absent when the batch wrote nothing.
 */
export type TransactionImportOutcome = (
  | { ok: true; results: TransactionResult[] }
  | { ok: false; error: TransactionImportError }
  | { ok: false; refusal: Refusal }
) & { written?: Written };

type Planned = { index: number; record: StoredTransaction; echo: RawTransaction; redated: boolean };
type Plan =
  | { ok: true; results: (TransactionResult | null)[]; toWrite: Planned[]; ledger: LedgerState }
  | { ok: false; error: TransactionImportError }
  | { ok: false; refusal: Refusal };

/** The ledger balance leaves the bound within which money is held exactly (`vocabulary/money.ts`). */
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
 * What a decision leaves to do once its entry is there: the re-dating note the entry counts, to write
 * (`note`, decided now) or to make sure of (`fromEntry`, an earlier attempt's entry that counts one).
 */
type Decided = {
  outcome: TransactionImportOutcome;
  note?: RedatingNote;
  fromEntry?: { seq: number; dedupKey: string };
};

/**
 * Imports a batch of transactions onto one ledger as one journal entry: the plan is made against the head
 * the entry is appended after (a concurrent import that appended first is seen, and its transactions count
 * as existing), and the ledger balance moves by exactly what the entry adds. A failing plan writes nothing;
 * a dry run answers what the import would give and writes nothing.
 *
 * The entry is marked with the batch's identity (its ledger and transaction ids) and how many transactions it
 * added, which its event reports: the same batch sent again finds that mark and writes nothing, and answers
 * the entry's count, not the batch's size. The re-dating note follows from the entry, never from a decision
 * that may be taken again: written once the entry is in, from what the entry re-dated (so a writer that lost
 * its race and re-planned writes no note for transactions it did not add), and by a repeat of the batch when
 * the first attempt stopped between the two.
 */
export async function importTransactions(
  storage: NoteStorage,
  locks: AccountLocks,
  input: TransactionImport,
  now: Date,
): Promise<TransactionImportOutcome> {
  const ids = input.transactions.map((t) => t.transaction_id).sort();
  const run = () => storage.journal.append<Decided>(input.accountId, (head) => decide(head, input, ids), now);
  const decided = input.dryRun ? await run() : await locks.with(input.accountId, run);
  if (decided?.note) await writeRedatingNote(storage.notes, input.accountId, decided.note, now);
  if (decided?.fromEntry) await ensureRedatingNote(storage, input.accountId, decided.fromEntry);
  return decided?.outcome ?? { ok: false, refusal: ledgerNotFound(input.ledgerCode) };
}

/** The batch's fate against the head its entry would follow (`ids`: its transaction ids, sorted). */
function decide(head: JournalHead, input: TransactionImport, ids: readonly string[]): Decision<Decided> {
  const ledger = ledgerOf(head, input.ledgerCode);
  if (!ledger)
    return { write: null, result: { outcome: { ok: false, refusal: ledgerNotFound(input.ledgerCode) } } };
  const ref = writeRef(ledger.code, ids);
  const key = requestKey('transactions', ref);
  const before = head.requests.get(key);
  const written = before && { ref, count: before.count };
  const fromEntry = before?.note && !input.dryRun ? { seq: before.seq, dedupKey: before.note } : undefined;
  const p = plan(head, ledger, input);
  if (!p.ok) return { write: null, result: { outcome: { ...p, written }, fromEntry } };
  if (input.dryRun) return { write: null, result: { outcome: { ok: true, results: added(p) } } };
  // An earlier attempt of this batch wrote it: the plan finds every transaction there.
  if (before || p.toWrite.length === 0)
    return { write: null, result: { outcome: { ok: true, results: added(p), written }, fromEntry } };
  const note = redatingNoteOf(p.toWrite.filter((w) => w.redated).map((w) => w.record));
  const delta = p.toWrite.reduce(
    (sum, w) => (BALANCE_ORIGINS.has(w.record.origin) ? sum + w.record.signedMinor : sum),
    0,
  );
  const count = p.toWrite.length;
  return {
    write: {
      kind: 'transactions',
      ledgers: withLedger(head, { ...ledger, balanceMinor: ledger.balanceMinor + delta }),
      keys: [
        ...p.toWrite.map((w) => transactionKey(w.record.transactionId)),
        ...(note ? [noteKey(note.dedupKey)] : []),
      ],
      records: { transactions: p.toWrite.map((w) => w.record) },
      request: { key, count, ...(note ? { note: note.dedupKey } : {}) },
    },
    result: { outcome: { ok: true, results: added(p), written: { ref, count } }, ...(note && { note }) },
  };
}

/** The query flags of a transactions import (both default to true). */
export type TransactionsImportOptions = {
  checkPreviouslyAdded: boolean;
  forceAddToCurrentStatement: boolean;
};

/**
 * The transactions step: the batch imported onto the target account under its lock, then its event with
 * what the batch's entry added (a dry run writes nothing and publishes nothing; a batch that added nothing
 * has no event). Sent again, the batch publishes its entry's event again: the same event, whatever the
 * answer (see `publishPostImport`).
 */
export async function runTransactionsImport(
  ctx: PostImportContext,
  target: PostImportTarget<TransactionsImport>,
  options: TransactionsImportOptions,
): Promise<TransactionImportOutcome> {
  const { account, data, request } = target;
  const dryRun = data.dry_run === true;
  const outcome = await importTransactions(
    ctx.storage,
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
  if (outcome.written && !dryRun)
    await publishPostImport(ctx, target, { resource: 'transactions', ...outcome.written });
  return outcome;
}
