import type { Types } from 'mongoose';
import { ApiError, type FieldError } from '../api/errors.js';
import type { Models } from '../models/index.js';
import type { HistoricalStatement } from '../schemas/post-import.js';
import { withLedger } from './ledger-balance.js';
import type { LedgerLocks } from './ledger-lock.js';
import { ledgerIdFor, statementIdFor } from '../models/record-ids.js';
import { insertIgnoringDuplicates, nextDay } from './target.js';
import { accountLedgerCodes } from './transactions.js';

function alreadyExists(statements: readonly HistoricalStatement[], ids: ReadonlySet<string>): ApiError {
  const errors: FieldError[] = [];
  statements.forEach((s, i) => {
    if (ids.has(s.statement_id)) {
      errors.push({
        detail: `Statement ${s.statement_id} already exists on the account.`,
        code: 'historical_statement_already_exists',
        attr: `statements.${i}.statement_id`,
      });
    }
  });
  return new ApiError('historical_statement_already_exists', { errors });
}

/**
 * Records historical statements (document references only). A `statement_id` already on the account refuses
 * the request before anything is written; a concurrent request that inserted the same id first wins (unique
 * index), and this one answers the same refusal. The open statement period of every ledger of the account
 * then starts no earlier than the day after the latest imported statement (only ever moved forward, under
 * the ledger lock, so the order of concurrent imports does not matter).
 */
export async function importStatements(
  models: Models,
  locks: LedgerLocks,
  accountId: Types.ObjectId,
  statements: readonly HistoricalStatement[],
  resolvePath: (path: string) => string,
): Promise<void> {
  const ids = statements.map((s) => s.statement_id);
  const found = await Promise.all(
    ids.map((id) => models.Statement.findById(statementIdFor(accountId, id), { _id: 1 }).lean()),
  );
  if (found.some((f) => f !== null))
    throw alreadyExists(statements, new Set(ids.filter((_, i) => found[i] !== null)));

  const docs = statements.map((s) => ({
    _id: statementIdFor(accountId, s.statement_id),
    accountId,
    statementId: s.statement_id,
    billPeriodFromDate: s.bill_period_from_date,
    billPeriodToDate: s.bill_period_to_date,
    issuedDate: s.issued_date,
    number: s.number,
    grossAmountMinor: s.gross_amount,
    documentLocation: s.statement_path ? resolvePath(s.statement_path) : null,
    origin: 'historical_import',
  }));
  const inserted = await insertIgnoringDuplicates(models.Statement, docs);

  const latest = statements
    .filter((_, i) => inserted.has(i))
    .reduce<string | null>(
      (max, s) => (max === null || s.bill_period_to_date > max ? s.bill_period_to_date : max),
      null,
    );
  if (latest !== null) {
    const start = nextDay(latest);
    for (const code of await accountLedgerCodes(models, accountId)) {
      await withLedger(models, locks, ledgerIdFor(accountId, code), async (ledger) => {
        if ((ledger.openPeriodStart ?? '') < start)
          await models.Ledger.updateOne({ _id: ledger._id }, { $set: { openPeriodStart: start } });
      });
    }
  }

  if (inserted.size < docs.length)
    throw alreadyExists(statements, new Set(ids.filter((_, i) => !inserted.has(i))));
}
