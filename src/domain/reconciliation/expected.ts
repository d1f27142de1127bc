import { dayAfter } from '../dates.js';
import { documentLocation } from '../document-location.js';
import { toCents, type TransactionType } from '../../vocabulary/money.js';
import { DigestAccumulator } from './digest.js';
import type {
  AccountFacts,
  BillingDocumentsImportFacts,
  NotesImportFacts,
  StatementsImportFacts,
  TransactionFacts,
  TransactionsImportFacts,
} from './inputs.js';
import { noteDedupKey, redatingNoteKey } from './note-keys.js';
import {
  BALANCE_ORIGINS,
  zeroOriginCounts,
  type OriginCounts,
  type TransactionOrigin,
} from '../../vocabulary/transaction-origins.js';

/**
 * What an account should hold, worked out on the legacy side from the data that was sent: the account payload,
 * then the post-import request bodies, applied with the service's own rules (see `docs/client.md`,
 * "Reconciling a cohort"):
 *
 * - a ledger starts at the payload's `ledger_balance` with the payload's historical and current statement
 *   transactions; only imported transactions move the balance afterwards (`BALANCE_ORIGINS`);
 * - a transaction id counts once per account, whatever request or origin carries it again (the service's
 *   journal keys are per account): the first one read wins;
 * - a transaction import without `ledger_code` goes onto the payload's first ledger; one with `dry_run: true`
 *   writes nothing; transactions dated before the ledger's open statement period are re-dated by the service,
 *   which writes one pinned note per request that re-dated any (counted in `notes`);
 * - statements count once per `statement_id`, billing documents once per identifier on their ledger;
 * - notes count once per dedup key (content and `created_at`); an undated imported note is not new when the
 *   account had a note with the same content before the request.
 *
 * Kept compact, since a client holds one per account of a cohort: running figures (cents, counts, the digest's
 * sum) and the keys that deduplication needs (transaction ids, statement ids, note keys), never the payloads.
 */

const SIGN: Readonly<Record<TransactionType, 1n | -1n>> = {
  PAYMENT: 1n,
  CREDIT: 1n,
  CHARGE: -1n,
  REPAYMENT: -1n,
  SUPPLY_CHARGE: -1n,
};

/** One ledger's expected figures. */
export type ExpectedLedger = {
  code: string;
  balanceCents: bigint;
  transactionCount: number;
  byOrigin: OriginCounts;
  digest: string;
  billingDocuments: number;
};

export type ExpectedFigures = { ledgers: ExpectedLedger[]; statements: number; notes: number };

/** A ledger while the account's data is applied. */
class LedgerTally {
  transactionCount = 0;
  readonly byOrigin = zeroOriginCounts();
  readonly digest = new DigestAccumulator();
  readonly billingDocuments = new Set<string>();

  constructor(
    readonly code: string,
    public balanceCents: bigint,
    /** The first day of the open statement period (null for a ledger the payload does not have). */
    readonly openPeriodStart: string | null,
  ) {}

  figures(): ExpectedLedger {
    return {
      code: this.code,
      balanceCents: this.balanceCents,
      transactionCount: this.transactionCount,
      byOrigin: { ...this.byOrigin },
      digest: this.digest.hex,
      billingDocuments: this.billingDocuments.size,
    };
  }
}

/** The label of the ledger a transaction import names none of when the payload has no ledger at all. */
export const NO_LEDGER = '(first ledger)';

export class AccountExpectation {
  private readonly ledgers = new Map<string, LedgerTally>();
  private readonly transactionIds = new Set<string>();
  private readonly statementIds = new Set<string>();
  private readonly noteKeys = new Set<string>();
  private readonly noteContents = new Set<string>();

  /** The account right after its creation from `payload`. */
  constructor(payload: AccountFacts) {
    for (const l of payload.ledgers ?? []) {
      const ledger = new LedgerTally(
        l.ledger_code,
        toCents(l.ledger_balance),
        dayAfter(l.last_statement_closing_date),
      );
      this.ledgers.set(l.ledger_code, ledger);
      // The payload's balance holds its own transactions already: they do not move it.
      for (const t of l.historical_statement_transactions ?? [])
        this.addTransaction(ledger, t, 'historical_statement', false);
      for (const t of l.current_statement_transactions ?? [])
        this.addTransaction(ledger, t, 'current_statement', false);
    }
    for (const s of payload.statements ?? []) this.statementIds.add(s.statement_id);
    for (const n of payload.notes ?? []) {
      const key = noteDedupKey(n.body, [], n.created_at);
      this.noteKeys.add(key.dedupKey);
      this.noteContents.add(key.contentHash);
    }
  }

  /** A transaction import: new ids onto the named (or first) ledger, moving its balance. */
  addTransactions(body: TransactionsImportFacts): void {
    if (body.dry_run === true) return;
    const ledger = this.ledger(body.ledger_code ?? this.ledgers.keys().next().value ?? NO_LEDGER);
    const redated: string[] = [];
    for (const t of body.transactions) {
      if (!this.addTransaction(ledger, t, 'imported', true)) continue;
      if (ledger.openPeriodStart !== null && t.transaction_date < ledger.openPeriodStart)
        redated.push(t.transaction_id);
    }
    if (redated.length > 0) this.noteKeys.add(redatingNoteKey(ledger.code, redated).dedupKey);
  }

  /** A historical billing document import: its documents and their (and the additional) transactions. */
  addBillingDocuments(body: BillingDocumentsImportFacts): void {
    const ledger = this.ledger(body.ledger_code);
    for (const d of body.historical_billing_documents) {
      ledger.billingDocuments.add(d.billing_document_identifier);
      for (const t of d.transactions) this.addTransaction(ledger, t, 'billing_document', true);
    }
    for (const t of body.additional_historical_transactions ?? [])
      this.addTransaction(ledger, t, 'additional_historical', true);
  }

  addStatements(body: StatementsImportFacts): void {
    for (const s of body.statements) this.statementIds.add(s.statement_id);
  }

  /**
   * A note import. Document paths stand for their locations as the service resolves them (one supplier's
   * bucket and root, the same for every note of the account), so equal locations give equal keys here too.
   * An undated note matches the contents the account had before the request, as the service looks them up.
   */
  addNotes(body: NotesImportFacts): void {
    const before = new Set(this.noteContents);
    for (const n of body.notes) {
      const locations = (n.document_paths ?? []).map((p) => documentLocation('', '', p.document_path));
      const key = noteDedupKey(n.body ?? null, locations, n.created_at ?? null);
      if (n.created_at === undefined && before.has(key.contentHash)) continue;
      this.noteKeys.add(key.dedupKey);
      this.noteContents.add(key.contentHash);
    }
  }

  figures(): ExpectedFigures {
    return {
      ledgers: [...this.ledgers.values()].map((l) => l.figures()),
      statements: this.statementIds.size,
      notes: this.noteKeys.size,
    };
  }

  /** The ledger of that code; one the payload does not have is expected empty (the service will not have it). */
  private ledger(code: string): LedgerTally {
    let ledger = this.ledgers.get(code);
    if (!ledger) {
      ledger = new LedgerTally(code, 0n, null);
      this.ledgers.set(code, ledger);
    }
    return ledger;
  }

  /**
   * Adds a transaction whose id is new to the account (false when the account has the id already). One written
   * after the creation moves the balance when its origin does, as the service's journal moves it.
   */
  private addTransaction(
    ledger: LedgerTally,
    t: TransactionFacts,
    origin: TransactionOrigin,
    afterCreation: boolean,
  ): boolean {
    if (this.transactionIds.has(t.transaction_id)) return false;
    this.transactionIds.add(t.transaction_id);
    const cents = SIGN[t.type] * toCents(t.amount);
    ledger.transactionCount++;
    ledger.byOrigin[origin]++;
    ledger.digest.add(ledger.code, t.transaction_id, cents);
    if (afterCreation && BALANCE_ORIGINS.has(origin)) ledger.balanceCents += cents;
    return true;
  }
}
