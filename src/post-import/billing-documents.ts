import { createHash } from 'node:crypto';
import type { Types } from 'mongoose';
import { ApiError, type FieldError } from '../api/errors.js';
import type { Models } from '../models/index.js';
import type { BillingDocumentsImport } from '../schemas/post-import.js';
import type { Transaction } from '../schemas/transaction.js';
import { withLedger } from './ledger-balance.js';
import type { LedgerLocks } from './ledger-lock.js';
import { billingDocumentIdFor, transactionIdFor } from '../models/record-ids.js';
import { insertIgnoringDuplicates } from './target.js';
import { transactionRecord, type LedgerDoc } from './transactions.js';

type Raw = Record<string, unknown>;
type Located = { t: Transaction; raw: Raw; attr: string; identifier: string | null };

const HISTORICAL_ORIGINS = ['billing_document', 'additional_historical'];

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
 * The one historical billing document import of a ledger. The ledger is claimed under the ledger lock
 * (hasFinalizedBillingDocument false -> true, with a hash of this request); a later import is refused.
 * If the claiming request crashed half-way, the same request sent again finds its own unfinished claim and
 * completes it (inserts ignore duplicates). Historical transactions are already inside the last statement
 * balance, so the ledger balance does not move.
 */
export async function importBillingDocuments(
  models: Models,
  locks: LedgerLocks,
  accountId: Types.ObjectId,
  ledger: LedgerDoc,
  data: BillingDocumentsImport,
  rawBody: Raw,
  now: Date,
): Promise<void> {
  const key = createHash('sha256').update(JSON.stringify(data)).digest('hex');
  const resuming = ledger.billingImportKey === key && !ledger.billingImportCompletedAt;
  if (ledger.hasFinalizedBillingDocument && !resuming)
    throw new ApiError('ledger_has_finalized_billing_document');

  const located = locate(data, rawBody);
  const found = await Promise.all(
    located.map((l) =>
      models.Transaction.findById(transactionIdFor(accountId, l.t.transaction_id), {
        transactionId: 1,
        ledgerId: 1,
        origin: 1,
      }).lean(),
    ),
  );
  const clashes = found.filter((c) => c !== null);
  const ours = (c: (typeof clashes)[number]) =>
    resuming && c.ledgerId.equals(ledger._id) && HISTORICAL_ORIGINS.includes(c.origin);
  const clashing = new Set(clashes.filter((c) => !ours(c)).map((c) => c.transactionId));
  if (clashing.size > 0) {
    const errors: FieldError[] = located
      .filter((l) => clashing.has(l.t.transaction_id))
      .map((l) => ({
        detail: `Transaction ${l.t.transaction_id} already exists on the account.`,
        code: 'transaction_already_exists',
        attr: l.attr,
      }));
    throw new ApiError('request_failed_validation', { errors });
  }

  await withLedger(models, locks, ledger._id, async (current) => {
    const ownUnfinished = current.billingImportKey === key && !current.billingImportCompletedAt;
    if (current.hasFinalizedBillingDocument && !ownUnfinished)
      throw new ApiError('ledger_has_finalized_billing_document');
    if (!ownUnfinished)
      await models.Ledger.updateOne(
        { _id: ledger._id },
        { $set: { hasFinalizedBillingDocument: true, billingImportKey: key } },
      );
  });

  await insertIgnoringDuplicates(
    models.BillingDocument,
    data.historical_billing_documents.map((d) => ({
      _id: billingDocumentIdFor(ledger._id, d.billing_document_identifier),
      accountId,
      ledgerId: ledger._id,
      identifier: d.billing_document_identifier,
      documentType: d.billing_document_type,
      issuedDate: d.issued_date,
      billPeriodFromDate: d.bill_period_from_date ?? null,
      billPeriodToDate: d.bill_period_to_date ?? null,
      finalized: true,
    })),
  );

  await insertIgnoringDuplicates(
    models.Transaction,
    located.map((l) =>
      l.identifier === null
        ? transactionRecord(accountId, ledger._id, l.t, l.raw, 'additional_historical')
        : transactionRecord(accountId, ledger._id, l.t, l.raw, 'billing_document', {
            billingDocumentId: billingDocumentIdFor(ledger._id, l.identifier),
          }),
    ),
  );
  await withLedger(models, locks, ledger._id, async (current) => {
    if (current.billingImportKey === key)
      await models.Ledger.updateOne({ _id: ledger._id }, { $set: { billingImportCompletedAt: now } });
  });
}
