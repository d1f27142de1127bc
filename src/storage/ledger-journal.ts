import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import {
  journalEntryId,
  type JournalEntryDoc,
  type journalEntryKinds,
  type transactionOrigins,
} from '../models/journal-entry.js';
import { signedMinor } from '../domain/money.js';
import type { Transaction } from '../schemas/transaction.js';
import { batchedInsert, completeDocument } from './insert-batcher.js';
import { packText, unpackText } from './packed-text.js';
import { retryTransient } from './transient.js';

/**
 * The repository of ledgers and transactions (with the statements and billing documents that move them):
 * each account's ledger journal, an append-only sequence of entries (see `models/journal-entry.ts`).
 *
 * Why a journal:
 * - Writes per account do not grow with its transactions: a creation writes one entry whatever its history,
 *   an import one entry per request.
 * - Nothing can lose an update, whatever a lock does: every change is decided against the head it read and
 *   written as the insert of the next sequence number. A writer that lost the race (duplicate `_id`) re-reads
 *   the head, which now holds the winner's entry, and decides again. FerretDB v1 has no atomic conditional
 *   update and no multi-document transaction, but an insert with a unique `_id` is atomic there as on MongoDB.
 * - A request is all or nothing: its transactions, statements, billing documents and the ledger state they
 *   lead to are one document.
 *
 * FerretDB-specific measures, kept here (a MongoDB deployment could simplify them without touching business
 * rules): entries are read by exact `_id` only, the head found by probing the next sequence number from the
 * last one seen (FerretDB answers any other filter, even an indexed one, by reading the whole collection);
 * unqueried data is stored as JSON text (its cost there follows BSON values, not bytes); inserts go through
 * the group commit (`batchedInsert`) and are retried on SQLITE_BUSY (`retryTransient`).
 * Entries never change once written, so every process may remember what it read: only the position of the
 * head is ever uncertain, and the probe settles it.
 */

export type TransactionOrigin = (typeof transactionOrigins)[number];
export type JournalEntryKind = (typeof journalEntryKinds)[number];

/** A ledger's state after an entry. Money in integer minor units (cents). */
export type LedgerState = {
  code: string;
  /** Position in the account payload: the first ledger is the default for transaction imports. */
  position: number;
  lastStatementBalanceMinor: number;
  lastStatementClosingDate: string | null;
  /** The first day of the open statement period (the day after the last closed statement). */
  openPeriodStart: string | null;
  balanceMinor: number;
  /** The ledger's one historical billing document import: a hash of the request that made it. */
  billingImportKey: string | null;
};

export type StoredTransaction = {
  transactionId: string;
  ledgerCode: string;
  transactionDate: string;
  originalTransactionDate: string | null;
  type: string;
  /** The exact decimal text of the magnitude. */
  amount: string;
  /** Its effect on the ledger balance, in cents. */
  signedMinor: number;
  origin: TransactionOrigin;
  /** The historical billing document it belongs to (its identifier), if any. */
  billingDocument: string | null;
  note: string | null;
  /** The transaction as received, so it can be echoed exactly. */
  data: Record<string, unknown>;
};

export type StoredStatement = {
  statementId: string;
  billPeriodFromDate: string;
  billPeriodToDate: string;
  issuedDate: string | null;
  number: string | null;
  grossAmountMinor: number | null;
  supplyType: string | null;
  documentLocation: string | null;
  origin: 'account_payload' | 'historical_import';
};

export type StoredBillingDocument = {
  ledgerCode: string;
  identifier: string;
  documentType: string;
  issuedDate: string;
  billPeriodFromDate: string | null;
  billPeriodToDate: string | null;
};

export type JournalRecords = {
  transactions?: StoredTransaction[];
  statements?: StoredStatement[];
  billingDocuments?: StoredBillingDocument[];
};

/** A transaction as the journal stores it: exact amount text, signed cents, the payload as received. */
export function storedTransaction(
  ledgerCode: string,
  t: Transaction,
  raw: unknown,
  origin: TransactionOrigin,
  extra: {
    transactionDate?: string;
    originalTransactionDate?: string | null;
    note?: string | null;
    billingDocument?: string | null;
  } = {},
): StoredTransaction {
  return {
    transactionId: t.transaction_id,
    ledgerCode,
    transactionDate: extra.transactionDate ?? t.transaction_date,
    originalTransactionDate: extra.originalTransactionDate ?? null,
    type: t.type,
    amount: t.amount,
    signedMinor: signedMinor(t.type, t.amount),
    origin,
    billingDocument: extra.billingDocument ?? null,
    note: extra.note !== undefined ? extra.note : (t.note ?? null),
    data: (raw ?? t) as Record<string, unknown>,
  };
}

/** Natural keys: unique per account across the whole journal. */
export const transactionKey = (transactionId: string) => `t:${transactionId}`;
export const statementKey = (statementId: string) => `s:${statementId}`;

/** The newest entry of an account's journal, as far as it is known. */
export type JournalHead = {
  readonly accountId: Types.ObjectId;
  readonly seq: number;
  /** Ordered by position. */
  readonly ledgers: readonly LedgerState[];
  readonly keys: ReadonlySet<string>;
};

export type JournalWrite = {
  kind: Exclude<JournalEntryKind, 'opened'>;
  /** Every ledger's state after the write. */
  ledgers: readonly LedgerState[];
  keys: readonly string[];
  records: JournalRecords;
};

/** What a writer decided from a head: an entry to append (or none), and what to answer once it is written. */
export type Decision<T> = { write: JournalWrite | null; result: T };

export type AccountHistory = {
  head: JournalHead;
  transactions: StoredTransaction[];
  statements: StoredStatement[];
  billingDocuments: StoredBillingDocument[];
};

/** More conflicting writers in a row than `append` retries: the caller answers "busy, retry". */
export class JournalContention extends Error {
  constructor(accountId: Types.ObjectId) {
    super(`ledger journal of account ${accountId.toHexString()} kept changing under its writer`);
  }
}

type EntryHeadFields = Pick<JournalEntryDoc, '_id' | 'ledgers' | 'keys'>;

const MAX_ATTEMPTS = 25;

export class LedgerJournal {
  /** Heads this process has read or written, by account; bounded by the number of keys they hold. */
  private readonly heads = new LRUCache<string, JournalHead>({
    maxSize: 500_000,
    sizeCalculation: (head) => head.keys.size + 1,
  });

  constructor(private readonly model: Models['JournalEntry']) {}

  /**
   * Writes entry 0 of a new account (its creation): the ledgers as migrated, with every transaction and
   * statement of the payload. Idempotent: the entry is derived from the payload, so a retried creation
   * inserts the same `_id` and its duplicate is a no-op.
   */
  async open(
    accountId: Types.ObjectId,
    opening: { ledgers: readonly LedgerState[]; keys: readonly string[]; records: JournalRecords },
    now: Date,
  ): Promise<void> {
    const doc = this.entryDocument(accountId, 0, 'opened', opening, now);
    await retryTransient(() => batchedInsert(this.model, [doc]));
  }

  /** The account's current head, or null when it has no journal yet (its creation has not written entry 0). */
  async head(accountId: Types.ObjectId): Promise<JournalHead | null> {
    const hex = accountId.toHexString();
    let head = this.heads.get(hex) ?? null;
    for (;;) {
      const seq = head ? head.seq + 1 : 0;
      const entry = await retryTransient(() =>
        this.model.findById(journalEntryId(hex, seq), { ledgers: 1, keys: 1 }).lean<EntryHeadFields>().exec(),
      );
      if (!entry) break;
      head = fold(accountId, head, seq, entry);
    }
    if (head) this.heads.set(hex, head);
    return head;
  }

  /**
   * Decides and writes one change of an account's journal. `decide` sees the current head and returns the
   * entry to append (or none) with the answer to give; when another writer appended first, the head is read
   * again and `decide` called again with it. So every answer was decided on the head it was written after.
   */
  async append<T>(
    accountId: Types.ObjectId,
    decide: (head: JournalHead) => Decision<T> | Promise<Decision<T>>,
    now: Date,
  ): Promise<T | null> {
    const hex = accountId.toHexString();
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const head = await this.head(accountId);
      if (!head) return null;
      const { write, result } = await decide(head);
      if (!write) return result;
      const seq = head.seq + 1;
      const doc = this.entryDocument(accountId, seq, write.kind, write, now);
      const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
      if (outcome === 'inserted') {
        this.heads.set(hex, fold(accountId, head, seq, doc));
        return result;
      }
      // Someone else's entry `seq`, or ours whose first answer was lost (a retried insert): the writer says.
      const there = await this.model.findById(doc._id, { writer: 1 }).lean<{ writer: string }>().exec();
      if (there?.writer === doc.writer) {
        this.heads.delete(hex);
        return result;
      }
    }
    throw new JournalContention(accountId);
  }

  /** Everything the journal holds for an account, folded (reads, reports and tests); null without a journal. */
  async history(accountId: Types.ObjectId): Promise<AccountHistory | null> {
    const hex = accountId.toHexString();
    const history: Omit<AccountHistory, 'head'> = { transactions: [], statements: [], billingDocuments: [] };
    let head: JournalHead | null = null;
    for (let seq = 0; ; seq++) {
      const entry = await this.model.findById(journalEntryId(hex, seq)).lean<JournalEntryDoc>().exec();
      if (!entry) break;
      head = fold(accountId, head, seq, entry);
      const records = JSON.parse(unpackText(entry.records)) as JournalRecords;
      history.transactions.push(...(records.transactions ?? []));
      history.statements.push(...(records.statements ?? []));
      history.billingDocuments.push(...(records.billingDocuments ?? []));
    }
    return head ? { head, ...history } : null;
  }

  /** The document of entry `seq` (exposed for the test that compares it with mongoose's own cast). */
  entryDocument(
    accountId: Types.ObjectId,
    seq: number,
    kind: JournalEntryKind,
    content: { ledgers: readonly LedgerState[]; keys: readonly string[]; records: JournalRecords },
    now: Date,
  ) {
    return completeDocument(
      this.model,
      {
        _id: journalEntryId(accountId.toHexString(), seq),
        accountId,
        seq,
        kind,
        writer: randomUUID(),
        ledgers: JSON.stringify(content.ledgers),
        keys: JSON.stringify(content.keys),
        records: packText(JSON.stringify(content.records)),
        createdAt: now,
      },
      now,
    );
  }
}

/** The head after entry `seq`: its ledgers, and the keys so far plus its own (a new set: heads are shared). */
function fold(
  accountId: Types.ObjectId,
  previous: JournalHead | null,
  seq: number,
  entry: Pick<JournalEntryDoc, 'ledgers' | 'keys'>,
): JournalHead {
  const added = JSON.parse(entry.keys) as string[];
  const keys = new Set(previous?.keys);
  for (const key of added) keys.add(key);
  const ledgers = (JSON.parse(entry.ledgers) as LedgerState[]).sort((a, b) => a.position - b.position);
  return { accountId, seq, ledgers, keys };
}

/** The ledger a request names, else the account's first one; undefined when there is none. */
export function ledgerOf(head: JournalHead, code: string | undefined): LedgerState | undefined {
  return code === undefined ? head.ledgers[0] : head.ledgers.find((l) => l.code === code);
}

/** The head's ledgers with one replaced. */
export function withLedger(head: JournalHead, next: LedgerState): LedgerState[] {
  return head.ledgers.map((l) => (l.code === next.code ? next : l));
}
