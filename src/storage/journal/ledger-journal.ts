import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { journalEntryId, type JournalEntryDoc } from '../models/journal-entry.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import {
  EMPTY_SUMMARY,
  figuresFromHistory,
  noteKey,
  withFigures,
  zeroFigures,
  type AccountSummary,
} from './journal-figures.js';
import type { JournalDeps } from './journal-deps.js';
import {
  fold,
  hasFigures,
  parseState,
  type AccountHistory,
  type Decision,
  type EntryStateFields,
  type JournalEntryKind,
  type JournalHead,
  type JournalState,
  type RequestMark,
  type StoredHead,
  type StoredState,
} from './journal-state.js';
import { packText, unpackText } from '../write-path/packed-text.js';
import { retryTransient } from '../write-path/transient.js';
import type { JournalRecords, LedgerBalances, StoredLedger } from './journal-records.js';

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
 *
 * Reconciliation reads the newest entry only (`state`): every entry carries each ledger's figures and the
 * account's (`journal-figures.ts`). It finds that entry from a per-account hint (`models/journal-head.ts`,
 * raised with `$max` every `HINT_STRIDE` entries, best effort) and probes forward from it, so the read costs a few reads
 * by `_id` whatever the account's history, and never folds the keys. An account written before the figures were
 * kept (its newest entry has no `summary`) gets them once: its history is folded and the result appended as a
 * `figures` entry, by the same unique-`_id` insert as any write (`head` does it before any writer decides).
 */

/** More conflicting writers in a row than `append` retries: the caller answers "busy, retry". */
export class JournalContention extends Error {
  constructor(accountId: Types.ObjectId) {
    super(`ledger journal of account ${accountId.toHexString()} kept changing under its writer`);
  }
}

type EntryHeadFields = Pick<JournalEntryDoc, '_id' | 'ledgers' | 'keys' | 'summary' | 'request'>;

const MAX_ATTEMPTS = 25;

/**
 * Appends raise the head hint every this many entries (an update each time: on FerretDB it costs about what an
 * insert does), so a read probes at most this many entries past it, and an import request pays the update a
 * quarter of the time. A read that walked this far raises it itself.
 */
const HINT_STRIDE = 4;

export class LedgerJournal {
  /** Heads this process has read or written, by account; bounded by the number of keys they hold. */
  private readonly heads = new LRUCache<string, JournalHead>({
    maxSize: 500_000,
    sizeCalculation: (head) => head.keys.size + head.requests.size + 1,
  });
  constructor(
    private readonly model: Models['JournalEntry'],
    private readonly deps: JournalDeps,
  ) {}

  /**
   * Writes entry 0 of a new account (its creation): the ledgers as migrated, with every transaction and
   * statement of the payload (and the keys of its notes), and their figures. Idempotent: the entry is derived
   * from the payload, so a retried creation inserts the same `_id` and its duplicate is a no-op.
   */
  async open(
    accountId: Types.ObjectId,
    opening: { ledgers: readonly LedgerBalances[]; keys: readonly string[]; records: JournalRecords },
    now: Date,
  ): Promise<void> {
    const start = opening.ledgers.map((l) => ({ ...l, ...zeroFigures() }));
    const { ledgers, summary } = withFigures(start, EMPTY_SUMMARY, new Set(), opening);
    const doc = this.entryDocument(accountId, 0, 'opened', { ...opening, ledgers, summary }, now);
    await retryTransient(() => batchedInsert(this.model, [doc]));
  }

  /**
   * The account's current head with its figures, or null when it has no journal yet (its creation has not
   * written entry 0). A head without figures (written before they were kept) gets them first.
   */
  async head(accountId: Types.ObjectId): Promise<JournalHead | null> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const head = await this.probe(accountId);
      if (!head) return null;
      if (hasFigures(head)) {
        this.heads.set(accountId.toHexString(), head);
        return head;
      }
      await this.addFigures(accountId, head);
    }
    throw new JournalContention(accountId);
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
      const figured = withFigures(write.ledgers, head.summary, head.keys, write);
      const doc = this.entryDocument(accountId, seq, write.kind, { ...write, ...figured }, now);
      const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
      if (outcome === 'inserted') {
        this.heads.set(hex, fold(accountId, head, seq, doc) as JournalHead);
        if (seq % HINT_STRIDE === 0) await this.raiseHint(hex, seq);
        return result;
      }
      // Someone else's entry `seq`, or ours whose first answer was lost (a retried insert): the writer says.
      const there = await this.model.findById(doc._id, { writer: 1 }).lean<{ writer: string }>().exec();
      if (there?.writer === doc.writer) {
        this.heads.delete(hex);
        if (seq % HINT_STRIDE === 0) await this.raiseHint(hex, seq);
        return result;
      }
    }
    throw new JournalContention(accountId);
  }

  /**
   * The newest entry's ledgers and account figures (reconciliation), or null without a journal. Read from the
   * head hint forward: the entry the hint names (or the one this process holds) and the next, by `_id`, then
   * onwards while there are more; keys are never read. An account written before figures were kept gets them
   * once (`head`), its later reads are as cheap as any.
   */
  async state(accountId: Types.ObjectId): Promise<JournalState | null> {
    const hex = accountId.toHexString();
    const cached = this.heads.get(hex);
    const hint = this.deps.hints
      ? await retryTransient(() => this.deps.hints!.findById(hex, { seq: 1 }).lean<{ seq: number }>().exec())
      : null;
    const from = Math.max(cached?.seq ?? 0, hint?.seq ?? 0);
    const [at, next] = await Promise.all([
      cached?.seq === from ? cached : this.readState(hex, from),
      this.readState(hex, from + 1),
    ]);
    // Nothing at the hint: no journal (entry 0), or a hint from elsewhere (walk the journal itself).
    if (!at) return from === 0 ? null : this.headState(accountId);
    let last: StoredState = at;
    for (let probe = next; probe; probe = await this.readState(hex, last.seq + 1)) last = probe;
    if (last.seq - (hint?.seq ?? 0) >= HINT_STRIDE) await this.raiseHint(hex, last.seq);
    return hasFigures(last)
      ? { seq: last.seq, ledgers: last.ledgers, summary: last.summary }
      : this.headState(accountId);
  }

  /**
   * What entry `seq` of an account added, as stored, and when it was written; null when there is no such
   * entry. For what follows from a write (a request sent again re-derives it from its entry, see `RequestMark`).
   */
  async entry(
    accountId: Types.ObjectId,
    seq: number,
  ): Promise<{ records: JournalRecords; createdAt: Date } | null> {
    const entry = await retryTransient(() =>
      this.model
        .findById(journalEntryId(accountId.toHexString(), seq), { records: 1, createdAt: 1 })
        .lean<Pick<JournalEntryDoc, 'records' | 'createdAt'>>()
        .exec(),
    );
    return (
      entry && {
        records: JSON.parse(unpackText(entry.records)) as JournalRecords,
        createdAt: entry.createdAt,
      }
    );
  }

  /** Everything the journal holds for an account, folded (reads, reports and tests); null without a journal. */
  async history(accountId: Types.ObjectId, upTo = Infinity): Promise<AccountHistory | null> {
    const hex = accountId.toHexString();
    const history: Omit<AccountHistory, 'head'> = { transactions: [], statements: [], billingDocuments: [] };
    let head: StoredHead | null = null;
    for (let seq = 0; seq <= upTo; seq++) {
      const entry = await retryTransient(() =>
        this.model.findById(journalEntryId(hex, seq)).lean<JournalEntryDoc>().exec(),
      );
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
    content: {
      ledgers: readonly StoredLedger[];
      keys: readonly string[];
      records: JournalRecords;
      summary?: AccountSummary;
      request?: RequestMark;
    },
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
        ...(content.summary ? { summary: JSON.stringify(content.summary) } : {}),
        records: packText(JSON.stringify(content.records)),
        ...(content.request ? { request: JSON.stringify(content.request) } : {}),
        createdAt: now,
      },
      now,
    );
  }

  /** The head as it is stored, from the one this process holds (or entry 0) onwards. */
  private async probe(accountId: Types.ObjectId): Promise<StoredHead | null> {
    const hex = accountId.toHexString();
    let head: StoredHead | null = this.heads.get(hex) ?? null;
    for (;;) {
      const seq = head ? head.seq + 1 : 0;
      const entry = await retryTransient(() =>
        this.model
          .findById(journalEntryId(hex, seq), { ledgers: 1, keys: 1, summary: 1, request: 1 })
          .lean<EntryHeadFields>()
          .exec(),
      );
      if (!entry) return head;
      head = fold(accountId, head, seq, entry);
    }
  }

  /**
   * Appends the figures of an account whose head has none (written before they were kept): its history up to
   * that head folded, with its notes' keys and its active payment instruction. Inserted as the next entry, so
   * of concurrent attempts one is written and the others find it (their insert is a duplicate).
   */
  private async addFigures(accountId: Types.ObjectId, head: StoredHead): Promise<void> {
    const [history, facts] = await Promise.all([
      this.history(accountId, head.seq),
      this.deps.legacyFacts(accountId),
    ]);
    if (!history || history.head.seq !== head.seq) return;
    const notes = facts.noteKeys.map(noteKey).filter((key) => !head.keys.has(key));
    const figured = figuresFromHistory(
      head.ledgers,
      { ...history, keys: new Set([...head.keys, ...notes]) },
      head.summary?.paymentInstruction ?? facts.paymentInstruction,
    );
    const seq = head.seq + 1;
    const now = new Date();
    const doc = this.entryDocument(accountId, seq, 'figures', { ...figured, keys: notes, records: {} }, now);
    const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
    if (outcome === 'inserted') await this.raiseHint(accountId.toHexString(), seq);
  }

  private async headState(accountId: Types.ObjectId): Promise<JournalState | null> {
    const head = await this.head(accountId);
    return head && { seq: head.seq, ledgers: head.ledgers, summary: head.summary };
  }

  private async readState(hex: string, seq: number): Promise<StoredState | null> {
    const entry = await retryTransient(() =>
      this.model
        .findById(journalEntryId(hex, seq), { ledgers: 1, summary: 1 })
        .lean<EntryStateFields>()
        .exec(),
    );
    return entry && { seq, ...parseState(entry) };
  }

  /**
   * Raises the account's head hint to `seq`. Best effort: a hint left behind (this write failed, the process
   * died first) only costs a reader a probe more, and the next append raises it.
   */
  private async raiseHint(hex: string, seq: number): Promise<void> {
    const hints = this.deps.hints;
    if (!hints) return;
    await hints.updateOne({ _id: hex }, { $max: { seq } }, { upsert: true }).catch(() => undefined);
  }
}
