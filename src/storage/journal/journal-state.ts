import type { Types } from 'mongoose';
import type { JournalEntryDoc, journalEntryKinds } from '../models/journal-entry.js';
import type { AccountSummary, PaymentInstructionSummary } from './journal-figures.js';
import type {
  JournalRecords,
  LedgerState,
  StoredBillingDocument,
  StoredLedger,
  StoredStatement,
  StoredTransaction,
} from './journal-records.js';

/**
 * An account's ledger journal as its repository (`ledger-journal.ts`) hands it out and takes it in: the head
 * folded from its entries, the newest entry's state, what a writer decides from a head, and the folding of
 * entries into heads. Pure: no database here.
 */

export type JournalEntryKind = (typeof journalEntryKinds)[number];

/** The newest entry of an account's journal, as far as it is known, with its figures. */
export type JournalHead = {
  readonly accountId: Types.ObjectId;
  readonly seq: number;
  /** Ordered by position. */
  readonly ledgers: readonly LedgerState[];
  readonly summary: AccountSummary;
  /** The natural keys of every entry up to this one. */
  readonly keys: ReadonlySet<string>;
  /** The post-import requests written by the entries up to this one, by their key (see `RequestMark`). */
  readonly requests: ReadonlyMap<string, RequestWritten>;
};

/**
 * Which request an entry's write was (a post-import request's identity, `<resource>:<ref>`), and how many
 * items of its resource the entry added: what the request's `post_import.completed-v1` event counts. So the
 * event is derived from the entry: a request sent again finds its entry there (one per request key: the
 * writer of a key already on the head writes nothing) and records the event with the entry's count, whatever
 * became of the first attempt after its write. `note`: the dedup key of a note the entry counts and whose
 * write follows the entry (a transaction import's re-dating note), so a repeat writes it if it is missing.
 */
export type RequestMark = { key: string; count: number; note?: string };

/** A request's mark as the head holds it, with the number of the entry that carries it. */
export type RequestWritten = RequestMark & { seq: number };

/** An entry as read, with the keys of every entry up to it: entries written before figures were kept have none. */
export type StoredHead = Omit<JournalHead, 'ledgers' | 'summary'> & {
  readonly ledgers: readonly StoredLedger[];
  readonly summary: AccountSummary | null;
};

/** What reconciliation reads of an account: its newest entry's ledgers (by position) and summary. */
export type JournalState = {
  readonly seq: number;
  readonly ledgers: readonly LedgerState[];
  readonly summary: AccountSummary;
};

export type JournalWrite = {
  kind: Exclude<JournalEntryKind, 'opened' | 'figures'>;
  /** Every ledger's balances after the write (the journal adds the figures of what it adds). */
  ledgers: readonly LedgerState[];
  keys: readonly string[];
  records: JournalRecords;
  /** The account's active payment instruction, when the write records it. */
  paymentInstruction?: PaymentInstructionSummary;
  /** The post-import request the write is, when it is one. */
  request?: RequestMark;
};

/** What a writer decided from a head: an entry to append (or none), and what to answer once it is written. */
export type Decision<T> = { write: JournalWrite | null; result: T };

export type AccountHistory = {
  head: StoredHead;
  transactions: StoredTransaction[];
  statements: StoredStatement[];
  billingDocuments: StoredBillingDocument[];
};

export type EntryStateFields = Pick<JournalEntryDoc, 'ledgers' | 'summary'>;

export type StoredState = { seq: number; ledgers: readonly StoredLedger[]; summary: AccountSummary | null };

/** Whether an entry carries the figures (every entry written since they are kept does, with its summary). */
export function hasFigures<H extends { summary: AccountSummary | null; ledgers: readonly StoredLedger[] }>(
  head: H,
): head is H & { summary: AccountSummary; ledgers: readonly LedgerState[] } {
  return head.summary !== null && head.ledgers.every((l) => l.digest !== undefined);
}

export function parseState(entry: EntryStateFields): Omit<StoredState, 'seq'> {
  const ledgers = (JSON.parse(entry.ledgers) as StoredLedger[]).sort((a, b) => a.position - b.position);
  const summary = entry.summary ? (JSON.parse(entry.summary) as AccountSummary) : null;
  return { ledgers, summary };
}

/**
 * The head after entry `seq`: its ledgers and summary, the keys and requests so far plus its own (new
 * collections: heads are shared).
 */
export function fold(
  accountId: Types.ObjectId,
  previous: StoredHead | null,
  seq: number,
  entry: Pick<JournalEntryDoc, 'ledgers' | 'keys' | 'summary' | 'request'>,
): StoredHead {
  const added = JSON.parse(entry.keys) as string[];
  const keys = new Set(previous?.keys);
  for (const key of added) keys.add(key);
  let requests = previous?.requests ?? NO_REQUESTS;
  if (entry.request) {
    const mark = JSON.parse(entry.request) as RequestMark;
    requests = new Map(requests).set(mark.key, { ...mark, seq });
  }
  return { accountId, seq, ...parseState(entry), keys, requests };
}

const NO_REQUESTS: ReadonlyMap<string, RequestWritten> = new Map();

/** The ledger a request names, else the account's first one; undefined when there is none. */
export function ledgerOf(head: JournalHead, code: string | undefined): LedgerState | undefined {
  return code === undefined ? head.ledgers[0] : head.ledgers.find((l) => l.code === code);
}

/** The head's ledgers with one replaced. */
export function withLedger(head: JournalHead, next: LedgerState): LedgerState[] {
  return head.ledgers.map((l) => (l.code === next.code ? next : l));
}
