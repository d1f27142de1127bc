import { accountIdFor } from '../src/storage/records/created-accounts.js';
import { buildJournalOpening, buildNotes } from '../src/use-cases/creation/records.js';
import { dayAfter } from '../src/domain/dates.js';
import { validateAccount, validateTransactionsImport } from '../src/domain/validation/index.js';
import { defaultCatalogue } from '../src/vocabulary/catalogue.js';
import { processKey } from '../src/storage/processes/process-key.js';
import { AccountLocks } from '../src/use-cases/post-import/account-lock.js';
import { importTransactions } from '../src/use-cases/post-import/transactions.js';
import { insertNotes } from '../src/storage/records/notes.js';
import { SUPPLIER, type creationEnv } from './creation-env.js';

/**
 * The reconciliation benchmarks' accounts, written without the API (creating thousands of realistic accounts
 * through it takes minutes here, and neither benchmark measures creation): each is written as the creation
 * writes it — the realistic payload's journal entry 0, its notes, the process marked imported — and then gets
 * `IMPORTED_TRANSACTIONS` transactions through the transaction import's use case.
 */

export const IMPORTED_TRANSACTIONS = 30;

type Env = Awaited<ReturnType<typeof creationEnv>>;

/** What every seeded account shares: the validated template, the imported transactions, the stores. */
export async function seedContext(e: Env) {
  const { models } = e.app.db;
  const journal = e.app.storage.journal;
  const locks = new AccountLocks(e.app.redis, e.app.config.QUEUE_PREFIX);
  const supplier = (await models.ImportSupplier.findOne({ code: SUPPLIER }).lean())!;
  const ctx = { region: 'ES', catalogue: defaultCatalogue, today: new Date().toISOString().slice(0, 10) };
  const raw = JSON.parse(JSON.stringify({ ...e.template, import_supplier: SUPPLIER })) as {
    ledgers: Array<{ last_statement_closing_date: string }>;
  };
  const account = validateAccount(raw, ctx);
  if (!account.ok) throw new Error(`template: ${JSON.stringify(account.errors).slice(0, 300)}`);
  // Dated in the open statement period: none is re-dated (no re-dating note).
  const open = dayAfter(raw.ledgers[0]!.last_statement_closing_date);
  const day = (n: number) =>
    new Date(Date.parse(`${open}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
  // Amounts in both forms the API accepts (text and number).
  const rawTransactions = Array.from({ length: IMPORTED_TRANSACTIONS }, (_, i) =>
    i % 3
      ? {
          transaction_id: `IMP-${i}`,
          transaction_date: day(i),
          amount: '12.40',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        }
      : {
          transaction_id: `IMP-${i}`,
          transaction_date: day(i),
          amount: 3.05,
          type: 'CHARGE',
          reason: 'LATE_PAYMENT_FEE',
        },
  );
  const checked = validateTransactionsImport(
    { import_supplier: SUPPLIER, external_account_number: 'TEMPLATE', transactions: rawTransactions },
    ctx,
  );
  if (!checked.ok) throw new Error(`transactions: ${JSON.stringify(checked.errors).slice(0, 300)}`);
  return {
    models,
    storage: e.app.storage,
    journal,
    locks,
    supplier,
    ctx,
    account: account.data,
    rawTransactions,
    transactions: checked.data.transactions,
  };
}

export type SeedContext = Awaited<ReturnType<typeof seedContext>>;

/** Account `i` (external number `ext`) written as created, with its transactions imported; returns its id. */
export async function seedAccount(seed: SeedContext, i: number, ext: string, now: Date) {
  const processId = processKey(SUPPLIER, ext);
  const accountId = accountIdFor(processId);
  const records = { accountId, bucket: 'bench-bucket', documentRoot: 'bench' };
  await Promise.all([
    seed.journal.open(accountId, buildJournalOpening(seed.account, records), now),
    insertNotes(seed.models, buildNotes(seed.account, records), now),
  ]);
  await seed.models.AccountImportProcess.create({
    _id: processId,
    organisationId: seed.supplier.organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: ext,
    stagedAt: now,
    krakenAccountNumber: `A-${i.toString(16).toUpperCase().padStart(8, '0')}`,
    accountCreatedAt: now,
  });
  const outcome = await importTransactions(
    seed.storage,
    seed.locks,
    {
      accountId,
      ledgerCode: undefined,
      transactions: seed.transactions,
      raws: seed.rawTransactions,
      checkPreviouslyAdded: true,
      forceAddToCurrentStatement: true,
      dryRun: false,
    },
    now,
  );
  if (!outcome.ok) throw new Error(`transactions: ${JSON.stringify(outcome)}`);
  return accountId;
}
