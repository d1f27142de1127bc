import type { Types } from 'mongoose';
import type { FieldError } from '../domain/validation/field-error.js';
import { dayAfter } from '../domain/dates.js';
import type { HistoricalStatement, StatementsImport } from '../schemas/post-import.js';
import { statementKey, type LedgerJournal, type StoredStatement } from '../storage/ledger-journal.js';
import type { AccountLocks } from './account-lock.js';
import type { PostImportContext } from './context.js';
import { publishPostImport } from './events.js';
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

/**
 * Records historical statements (document references only) as one journal entry, with every ledger's open
 * statement period moved to start no earlier than the day after the latest of them (only ever forward). A
 * `statement_id` already on the account refuses the whole request and nothing is written; of concurrent
 * requests with the same id, the first appended wins and the others, deciding again after it, are refused.
 */
export async function importStatements(
  journal: LedgerJournal,
  locks: AccountLocks,
  accountId: Types.ObjectId,
  statements: readonly HistoricalStatement[],
  resolvePath: (path: string) => string,
  now: Date,
): Promise<{ ok: true } | { ok: false; refusal: Refusal }> {
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
  const outcome = await locks.with(accountId, () =>
    journal.append<{ ok: true } | { ok: false; refusal: Refusal }>(
      accountId,
      (head) => {
        const taken = new Set(
          statements.filter((s) => head.keys.has(statementKey(s.statement_id))).map((s) => s.statement_id),
        );
        if (taken.size > 0)
          return { write: null, result: { ok: false, refusal: alreadyExists(statements, taken) } };
        if (records.length === 0) return { write: null, result: { ok: true } };
        const start = latest === null ? null : dayAfter(latest);
        return {
          write: {
            kind: 'statements',
            ledgers: head.ledgers.map((l) =>
              start !== null && (l.openPeriodStart ?? '') < start ? { ...l, openPeriodStart: start } : l,
            ),
            keys: records.map((r) => statementKey(r.statementId)),
            records: { statements: records },
          },
          result: { ok: true },
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
 * refused, so an event that cannot be recorded is logged and the answer stands.
 */
export async function runStatementsImport(
  ctx: PostImportContext,
  target: PostImportTarget<StatementsImport>,
): Promise<{ ok: true } | { ok: false; refusal: Refusal }> {
  const { supplier, account, data } = target;
  const outcome = await importStatements(
    ctx.storage.journal,
    ctx.locks,
    account._id,
    data.statements,
    documentResolver(ctx, supplier),
    ctx.clock(),
  );
  if (outcome.ok)
    await publishPostImport(ctx, target, {
      resource: 'statements',
      count: data.statements.length,
      repeatable: false,
    });
  return outcome;
}
