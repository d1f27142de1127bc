import { createHash } from 'node:crypto';
import type { Types } from 'mongoose';
import type { FieldError } from '../../domain/validation/field-error.js';
import type { BillingDocumentsImport } from '../../schemas/post-import.js';
import type { Transaction } from '../../schemas/transaction.js';
import { ledgerOf, withLedger } from '../../storage/journal/journal-state.js';
import { type LedgerJournal } from '../../storage/journal/ledger-journal.js';
import { storedTransaction, type StoredBillingDocument } from '../../storage/journal/journal-records.js';
import { transactionKey } from '../../storage/journal/journal-figures.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport, requestKey, writeRef, type Written } from './events.js';
import { ledgerNotFound, type Refusal } from './outcomes.js';
import type { PostImportTarget } from './target.js';

type Raw = Record<string, unknown>;
type Located = { t: Transaction; raw: Raw; attr: string; identifier: string | null };

function locate(data: BillingDocumentsImport, rawBody: Raw): Located[] {
  const rawDocs = (rawBody.historical_billing_documents ?? []) as { transactions?: Raw[] }[];
  const rawExtra = (rawBody.additional_historical_transactions ?? []) as Raw[];
  const located: Located[] = [];
  data.historical_billing_documents.forEach((doc, i) =>
    doc.transactions.forEach((t, j) =>
      located.push({
        t,
        raw: rawDocs[i]?.transactions?.[j] ?? {},
        attr: `historical_billing_documents.${i}.transactions.${j}.transaction_id`,
        identifier: doc.billing_document_identifier,
      }),
    ),
  );
  (data.additional_historical_transactions ?? []).forEach((t, i) =>
    located.push({
      t,
      raw: rawExtra[i] ?? {},
      attr: `additional_historical_transactions.${i}.transaction_id`,
      identifier: null,
    }),
  );
  return located;
}

/**
 * The refusal of an import onto a ledger that has had its one: always the interface's code, with the field error
 * `billing_documents_already_imported` when that import is this request's data (the same key), so that a file
 * sent again can be told from a different import.
 */
function finalizedRefusal(sameImport: boolean): Refusal {
  if (!sameImport) return { code: 'ledger_has_finalized_billing_document' };
  return {
    code: 'ledger_has_finalized_billing_document',
    errors: [
      {
        detail: 'This same import is already on the ledger.',
        code: 'billing_documents_already_imported',
        attr: 'ledger_code',
      },
    ],
  };
}

/** `written`: what the ledger's one import added (now, or before: any later request finds it), for its event. */
export type BillingDocumentsOutcome = ({ ok: true } | { ok: false; refusal: Refusal }) & {
  written?: Written;
};

/**
 * The one historical billing document import of a ledger, as one journal entry: the documents, their
 * transactions and the ledger's mark that it has had its import. Decided against the head it is appended
 * after, so of concurrent imports for one ledger exactly one is written, transaction ids already on the
 * account are checked in the same step as the write, and a refused request writes nothing. Historical
 * transactions are already inside the last statement balance, so the balance does not move.
 *
 * The entry is marked with the ledger (the write's identity: one per ledger) and its document count. A
 * request sent again after it is refused (`ledger_has_finalized_billing_document`, naming
 * `billing_documents_already_imported` when its data is the import's) and answers that count, so the import's
 * event is recorded even when the attempt that wrote it stopped before.
 */
export async function importBillingDocuments(
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  ledgerCode: string,
  data: BillingDocumentsImport,
  rawBody: Raw,
  now: Date,
): Promise<BillingDocumentsOutcome> {
  const key = createHash('sha256').update(JSON.stringify(data)).digest('hex');
  const located = locate(data, rawBody);
  const documents: StoredBillingDocument[] = data.historical_billing_documents.map((d) => ({
    ledgerCode,
    identifier: d.billing_document_identifier,
    documentType: d.billing_document_type,
    issuedDate: d.issued_date,
    billPeriodFromDate: d.bill_period_from_date ?? null,
    billPeriodToDate: d.bill_period_to_date ?? null,
  }));
  const ref = writeRef(ledgerCode);
  const requestAt = requestKey('billing_documents', ref);
  const outcome = await locks.with(accountId, () =>
    journal.append<BillingDocumentsOutcome>(
      accountId,
      (head) => {
        const ledger = ledgerOf(head, ledgerCode);
        if (!ledger) return { write: null, result: { ok: false, refusal: ledgerNotFound(ledgerCode) } };
        const before = head.requests.get(requestAt);
        if (ledger.billingImportKey !== null)
          return {
            write: null,
            result: {
              ok: false,
              refusal: finalizedRefusal(ledger.billingImportKey === key),
              written: before && { ref, count: before.count },
            },
          };
        const clashes: FieldError[] = located
          .filter((l) => head.keys.has(transactionKey(l.t.transaction_id)))
          .map((l) => ({
            detail: `Transaction ${l.t.transaction_id} already exists on the account.`,
            code: 'transaction_already_exists',
            attr: l.attr,
          }));
        if (clashes.length > 0)
          return {
            write: null,
            result: { ok: false, refusal: { code: 'request_failed_validation', errors: clashes } },
          };
        const count = documents.length;
        return {
          write: {
            kind: 'billing',
            ledgers: withLedger(head, { ...ledger, billingImportKey: key }),
            keys: located.map((l) => transactionKey(l.t.transaction_id)),
            records: {
              billingDocuments: documents,
              transactions: located.map((l) =>
                l.identifier === null
                  ? storedTransaction(ledgerCode, l.t, l.raw, 'additional_historical')
                  : storedTransaction(ledgerCode, l.t, l.raw, 'billing_document', {
                      billingDocument: l.identifier,
                    }),
              ),
            },
            request: { key: requestAt, count },
          },
          result: { ok: true, written: { ref, count } },
        };
      },
      now,
    ),
  );
  return outcome ?? { ok: false, refusal: ledgerNotFound(ledgerCode) };
}

/**
 * The billing documents step: the ledger's one historical import written under the account's lock, then
 * its event. A repeat is refused, and still publishes the event of the import there: an event that could not
 * be recorded after the write (the request failed) is recorded by the repeat.
 */
export async function runBillingDocumentsImport(
  ctx: PostImportContext,
  target: PostImportTarget<BillingDocumentsImport>,
): Promise<BillingDocumentsOutcome> {
  const { account, data, request } = target;
  const outcome = await importBillingDocuments(
    ctx.storage.journal,
    ctx.locks,
    account._id,
    data.ledger_code,
    data,
    request.body as Raw,
    ctx.clock(),
  );
  if (outcome.written)
    await publishPostImport(ctx, target, { resource: 'billing_documents', ...outcome.written });
  return outcome;
}
