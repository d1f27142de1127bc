import type { Types } from 'mongoose';
import type { FieldError } from '../../domain/validation/field-error.js';
import { dayAfter } from '../../domain/dates.js';
import type { HistoricalStatement, StatementsImport } from '../../schemas/post-import.js';
import { type LedgerJournal } from '../../storage/journal/ledger-journal.js';
import { statementKey } from '../../storage/journal/journal-figures.js';
import { type StoredStatement } from '../../storage/journal/journal-records.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport, requestKey, writeRef, type Written } from './events.js';
import type { Refusal } from './outcomes.js';
import { documentResolver, type PostImportTarget } from './target.js';

function alreadyExists(statements: readonly HistoricalStatement[], ids: ReadonlySet<string>): Refusal {
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
  return { code: 'historical_statement_already_exists', errors };
}

/** `written`: what the request's entry added (now, or on an earlier attempt of it), for its event. */
export type StatementsOutcome = ({ ok: true } | { ok: false; refusal: Refusal }) & { written?: Written };

/**
 * Records historical statements (document references only) as one journal entry, with every ledger's open
 * statement period moved to start no earlier than the day after the latest of them (only ever forward). A
 * `statement_id` already on the account refuses the whole request and nothing is written; of concurrent
 * requests with the same id, the first appended wins and the others, deciding again after it, are refused.
 * The entry is marked with the request's identity (its statement ids) and its count: the same request sent
 * again is refused as any other naming those ids, and answers that count for its event.
 */
export async function importStatements(
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  statements: readonly HistoricalStatement[],
  resolvePath: (path: string) => string,
  now: Date,
): Promise<StatementsOutcome> {
  const records: StoredStatement[] = statements.map((s) => ({
    statementId: s.statement_id,
    billPeriodFromDate: s.bill_period_from_date,
    billPeriodToDate: s.bill_period_to_date,
    issuedDate: s.issued_date,
    number: s.number,
    grossAmountMinor: s.gross_amount,
    supplyType: null,
    documentLocation: s.statement_path ? resolvePath(s.statement_path) : null,
    origin: 'historical_import',
  }));
  const latest = statements.reduce<string | null>(
    (max, s) => (max === null || s.bill_period_to_date > max ? s.bill_period_to_date : max),
    null,
  );
  const keys = [...new Set(records.map((r) => statementKey(r.statementId)))];
  const ref = writeRef(records.map((r) => r.statementId).sort());
  const key = requestKey('statements', ref);
  const outcome = await locks.with(accountId, () =>
    journal.append<StatementsOutcome>(
      accountId,
      (head) => {
        const before = head.requests.get(key);
        const written = before && { ref, count: before.count };
        const taken = new Set(
          statements.filter((s) => head.keys.has(statementKey(s.statement_id))).map((s) => s.statement_id),
        );
        if (taken.size > 0)
          return { write: null, result: { ok: false, refusal: alreadyExists(statements, taken), written } };
        if (records.length === 0) return { write: null, result: { ok: true } };
        const start = latest === null ? null : dayAfter(latest);
        return {
          write: {
            kind: 'statements',
            ledgers: head.ledgers.map((l) =>
              start !== null && (l.openPeriodStart ?? '') < start ? { ...l, openPeriodStart: start } : l,
            ),
            keys,
            records: { statements: records },
            request: { key, count: keys.length },
          },
          result: { ok: true, written: { ref, count: keys.length } },
        };
      },
      now,
    ),
  );
  // An account created without ledgers data has no journal yet: nothing to attach statements to.
  return outcome ?? { ok: false, refusal: { code: 'ledger_not_found', errors: [] } };
}

/**
 * The statements step: the statements recorded under the account's lock, then their event. A repeat is
 * refused (`historical_statement_already_exists`), and still publishes the event of the write it repeats:
 * an event that could not be recorded after the write (the request failed) is recorded by the repeat.
 */
export async function runStatementsImport(
  ctx: PostImportContext,
  target: PostImportTarget<StatementsImport>,
): Promise<StatementsOutcome> {
  const { supplier, account, data } = target;
  const outcome = await importStatements(
    ctx.storage.journal,
    ctx.locks,
    account._id,
    data.statements,
    documentResolver(ctx, supplier),
    ctx.clock(),
  );
  if (outcome.written) await publishPostImport(ctx, target, { resource: 'statements', ...outcome.written });
  return outcome;
}
