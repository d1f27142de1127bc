import type { Types } from 'mongoose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  validateBillingDocumentsImport,
  validateStatementsImport,
  validateTransactionsImport,
  type ValidationContext,
  type ValidationResult,
} from '../../src/domain/validation/index.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { createStorage } from '../../src/storage/index.js';
import { oneOffConnection } from '../../src/infra/redis.js';
import type { VerifyOutcome } from '../../src/use-cases/post-import/outcomes.js';
import { runBillingDocumentsImport } from '../../src/use-cases/post-import/billing-documents.js';
import { postImportContext, type PostImportContext } from '../../src/use-cases/post-import/context.js';
import { runStatementsImport } from '../../src/use-cases/post-import/statements.js';
import { resolveTarget } from '../../src/use-cases/post-import/target.js';
import { runTransactionsImport } from '../../src/use-cases/post-import/transactions.js';
import { readBackAccount } from '../../src/use-cases/reconciliation/read-back.js';
import { createWebhookProcess } from '../../src/use-cases/webhooks/webhook-process.js';
import { startHoldingProxy, type HoldingProxy } from '../support/mongo-proxy.js';
import { defaultLedger, seedAccount, startPostImportEnv, type PostImportEnv } from './fixtures.js';

// What the `post_import.completed-v1` events count, which the cohort progress adds up: per account and
// resource, the sum of their counts is the distinct items the endpoints wrote, under repeats, races and
// crashes. And the re-dating note a transaction import adds is one per write, never an orphan.

const COMPLETED = 'data_import.import_process.post_import.completed-v1';
let env: PostImportEnv;

beforeAll(async () => {
  env = await startPostImportEnv('eventcounts');
});
afterAll(async () => env?.close());

let seq = 0;
async function freshAccount() {
  const external = `EXT-EC-${++seq}`;
  const { account } = await seedAccount(env, external, [
    defaultLedger(),
    defaultLedger({ code: 'GAS', lastStatementBalanceMinor: 0 }),
  ]);
  return { external, accountId: account._id };
}

/** The counts of the account's completed events for a resource, oldest first. */
async function counts(external: string, resource: string): Promise<number[]> {
  const events = await env.t.app.db.models.ImportEvent.find({
    type: COMPLETED,
    externalAccountNumber: external,
  })
    .sort({ occurredAt: 1 })
    .lean();
  return events
    .map((e) => JSON.parse(e.data) as { resource: string; count: number })
    .filter((d) => d.resource === resource)
    .map((d) => d.count);
}
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

const payment = (id: string, date = '2025-06-10', amount = '1.00') => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'PAYMENT',
  payment_type: 'BANK_TRANSFER',
});
/** Dated before the open statement period (it starts on 2025-06-01): re-dated on import. */
const early = (id: string) => ({
  transaction_id: id,
  transaction_date: '2025-05-02',
  amount: '2.00',
  type: 'CHARGE',
  reason: 'IMPORTED_CHARGE',
});
const body = (external: string, fields: Record<string, unknown>) => ({
  import_supplier: env.supplier,
  external_account_number: external,
  ...fields,
});
const statement = (id: string, to: string) => ({
  bill_period_from_date: `${to.slice(0, 8)}01`,
  bill_period_to_date: to,
  statement_id: id,
  issued_date: '2025-07-03',
  number: `F-${id}`,
  gross_amount: 6421,
});
const billing = (external: string) =>
  body(external, {
    ledger_code: 'GAS',
    billing_document_type: 'ITEM_BASED',
    historical_billing_documents: ['1', '2', '3'].map((n) => ({
      billing_document_identifier: `FG-${n}`,
      billing_document_type: 'ITEM_BASED',
      issued_date: '2024-12-05',
      transactions: [
        {
          transaction_id: `BD-${n}`,
          transaction_date: '2024-12-05',
          amount: '9.10',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    })),
  });

/**
 * Another process running the post-import steps: its own database connection, through a proxy that can hold
 * one of its commands on the wire and then die (`crash`), and its own Redis connection (so it meets the API's
 * writers in Redis, not in the API process's line).
 */
async function otherProcess() {
  const mongo = new URL(env.t.config.MONGO_URL);
  const proxy: HoldingProxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
  const db: Database = await openDatabase({
    ...env.t.config,
    MONGO_URL: proxy.url(mongo.pathname.slice(1)),
    MONGO_SERVER_SELECTION_TIMEOUT_MS: 500,
  });
  const redis = oneOffConnection(env.t.config);
  const queues = env.t.app.queues;
  const storage = createStorage(db, { config: env.t.config });
  const clock = () => new Date();
  const webhookProcess = createWebhookProcess({
    config: env.t.config,
    log: pino({ level: 'silent' }),
    redis,
    clock,
  });
  const ctx: PostImportContext = postImportContext({
    storage,
    redis,
    config: env.t.config,
    clock,
    webhooks: () => queues.queue('webhooks'),
    webhookProcess,
    verifications: {
      removeFinished: (id) => queues.removeFinished('payment-verification', id),
      verify: (data, options) =>
        queues.enqueueAndWait<'verify-payment-instruction', VerifyOutcome>(
          'verify-payment-instruction',
          data,
          options,
        ),
    },
  });
  const supplier = await db.models.ImportSupplier.findOne({ code: env.supplier }).orFail();
  const target = async <T extends { import_supplier: string; external_account_number: string }>(
    request: Record<string, unknown>,
    validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
  ) => {
    const resolved = await resolveTarget(
      ctx,
      (code) => storage.suppliers.find(code, supplier.organisationId),
      { id: `other-${++seq}`, body: request, log: pino({ level: 'silent' }) },
      validate,
    );
    if (!resolved.ok) throw new Error(`refused: ${JSON.stringify(resolved.refusal)}`);
    return resolved.target;
  };
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    // What the proxy holds dies with it: the process is gone before its command reached the database.
    await proxy.close();
    await db.close().catch(() => undefined);
    await webhookProcess.drain();
    redis.disconnect();
  };
  return { proxy, ctx, target, close };
}

describe('what post-import events count', () => {
  it('transactions {T1, T2} then {T2, T3}: the events count 3, the items written', async () => {
    const { external } = await freshAccount();
    const first = await env.post(
      'transactions/create/',
      body(external, { transactions: [payment('T1'), payment('T2')] }),
    );
    expect(first.statusCode).toBe(201);
    const second = await env.post(
      'transactions/create/',
      body(external, { transactions: [payment('T2'), payment('T3')] }),
    );
    expect(second.json().results.map((r: { status: string }) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ADDED_TO_ACCOUNT',
    ]);
    expect(await counts(external, 'transactions')).toEqual([2, 1]);
    // Sent again (fields in another order too), and a batch of nothing new: no more counted.
    await env.post('transactions/create/', body(external, { transactions: [payment('T3'), payment('T2')] }));
    await env.post('transactions/create/', body(external, { transactions: [payment('T1')] }));
    expect(sum(await counts(external, 'transactions'))).toBe(3);
  });

  it('notes {N1, N2} then {N2, N3}: the events count 3; a note already on the account is not counted', async () => {
    const { external } = await freshAccount();
    const note = (n: string) => ({ body: `Note ${n}`, created_at: '2025-06-01T10:00:00Z' });
    expect(
      (await env.post('notes/create/', body(external, { notes: [note('N1'), note('N2')] }))).statusCode,
    ).toBe(201);
    const second = await env.post('notes/create/', body(external, { notes: [note('N2'), note('N3')] }));
    expect(second.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_CREATION_SUCCESS',
    ]);
    await env.post('notes/create/', body(external, { notes: [note('N3'), note('N1')] }));
    expect(await counts(external, 'notes')).toEqual([2, 1]);
  });

  it('a batch whose event was lost after its write records it when sent again, with what it added then', async () => {
    const { external } = await freshAccount();
    await env.post('transactions/create/', body(external, { transactions: [payment('R1')] }));
    const batch = body(external, { transactions: [payment('R1'), payment('R2'), payment('R3')] });
    // Another process writes the batch and dies while its event's insert is on the wire.
    const other = await otherProcess();
    try {
      const held = other.proxy.holdNext('insert', 'import_events');
      const dying = runTransactionsImport(other.ctx, await other.target(batch, validateTransactionsImport), {
        checkPreviouslyAdded: true,
        forceAddToCurrentStatement: true,
      });
      dying.catch(() => undefined);
      await held;
      await other.close();
      await dying.catch(() => undefined);
    } finally {
      await other.close();
    }
    expect(await counts(external, 'transactions')).toEqual([1]);

    const retry = await env.post('transactions/create/', batch);
    expect(retry.statusCode).toBe(201);
    // The batch added R2 and R3: its event counts 2, not 0 (nothing new now) nor 3 (the batch).
    expect(await counts(external, 'transactions')).toEqual([1, 2]);
  });

  it('a statements write whose event could not be recorded gets it when sent again, once, with its count', async () => {
    const { external } = await freshAccount();
    const request = body(external, {
      statements: [statement('ST-1', '2025-03-31'), statement('ST-2', '2025-04-30')],
    });
    const other = await otherProcess();
    try {
      const held = other.proxy.holdNext('insert', 'import_events');
      const dying = runStatementsImport(other.ctx, await other.target(request, validateStatementsImport));
      dying.catch(() => undefined);
      await held;
      await other.close();
      await dying.catch(() => undefined);
    } finally {
      await other.close();
    }
    expect(await counts(external, 'statements')).toEqual([]);

    // The statements are there: the repeat is refused, as any request naming them, and records their event.
    const repeat = await env.post('historical-statements/create/', request);
    expect(repeat.statusCode).toBe(400);
    expect(repeat.json().code).toBe('historical_statement_already_exists');
    expect(await counts(external, 'statements')).toEqual([2]);
    await env.post('historical-statements/create/', request);
    expect(await counts(external, 'statements')).toEqual([2]);
  });

  it('a billing documents write whose event could not be recorded gets it when sent again, once, with its count', async () => {
    const { external } = await freshAccount();
    const other = await otherProcess();
    try {
      const held = other.proxy.holdNext('insert', 'import_events');
      const dying = runBillingDocumentsImport(
        other.ctx,
        await other.target(billing(external), validateBillingDocumentsImport),
      );
      dying.catch(() => undefined);
      await held;
      await other.close();
      await dying.catch(() => undefined);
    } finally {
      await other.close();
    }
    expect(await counts(external, 'billing_documents')).toEqual([]);

    const repeat = await env.post('historical-billing-documents/create/', billing(external));
    expect(repeat.statusCode).toBe(400);
    expect(repeat.json().code).toBe('ledger_has_finalized_billing_document');
    expect(await counts(external, 'billing_documents')).toEqual([3]);
    await env.post('historical-billing-documents/create/', billing(external));
    expect(await counts(external, 'billing_documents')).toEqual([3]);
  });
});

/** The account's re-dating notes, as the transaction ids each one names. */
async function redatingNotes(accountId: Types.ObjectId): Promise<string[][]> {
  const notes = await env.t.app.db.models.Note.find({ accountId, origin: 'system' }).lean();
  return notes
    .map((n) =>
      /: (.*)\. Each transaction/
        .exec(n.body ?? '')![1]!
        .split(', ')
        .sort(),
    )
    .sort((a, b) => a.join().localeCompare(b.join()));
}

/** The transactions stored on a ledger that were re-dated, by id. */
async function redated(accountId: Types.ObjectId): Promise<string[]> {
  const history = await env.t.app.storage.journal.history(accountId);
  return (history?.transactions ?? [])
    .filter((t) => t.originalTransactionDate !== null)
    .map((t) => t.transactionId)
    .sort();
}

const reconciledNotes = async (external: string) => {
  const read = await readBackAccount({ storage: env.t.app.storage }, env.supplier, external, new Date());
  if (!read.ok) throw new Error(read.code);
  return read.body.notes;
};

describe('the re-dating note of a transaction import', () => {
  it('is written for what the entry re-dated: a writer that lost its race and re-planned leaves no orphan', async () => {
    const { external, accountId } = await freshAccount();
    const other = await otherProcess();
    try {
      // Writer A (another process) decides {E1, E2} and is stalled before its journal insert.
      const held = other.proxy.holdNext('insert', 'ledger_journal');
      const slow = runTransactionsImport(
        other.ctx,
        await other.target(
          body(external, { transactions: [early('E1'), early('E2')] }),
          validateTransactionsImport,
        ),
        { checkPreviouslyAdded: true, forceAddToCurrentStatement: true },
      );
      await held;
      // Its lock lapses; writer B, through the API, re-dates {E2, E3} meanwhile.
      await env.t.app.redis.del(other.ctx.locks.key(accountId));
      const fast = await env.post(
        'transactions/create/',
        body(external, { transactions: [early('E2'), early('E3')] }),
      );
      expect(fast.statusCode).toBe(201);
      other.proxy.release();
      // A's insert lost to B's entry: A decides again and adds E1 alone.
      const outcome = await slow;
      expect(outcome.ok && outcome.results.map((r) => r.status)).toEqual([
        'TRANSACTION_ADDED_TO_ACCOUNT',
        'TRANSACTION_ALREADY_EXISTS',
      ]);
    } finally {
      await other.close();
    }
    expect(await redated(accountId)).toEqual(['E1', 'E2', 'E3']);
    // One note per write, naming what that write re-dated: nothing twice, nothing it did not write.
    expect(await redatingNotes(accountId)).toEqual([['E1'], ['E2', 'E3']]);
    const stored = await env.t.app.db.models.Note.countDocuments({ accountId });
    expect(stored).toBe(2);
    expect(await reconciledNotes(external)).toBe(stored);
    expect(sum(await counts(external, 'transactions'))).toBe(3);
  });

  it('is written by the repeat when its writer stopped between the entry and the note', async () => {
    const { external, accountId } = await freshAccount();
    const request = body(external, { transactions: [early('F1'), early('F2'), payment('F3')] });
    const other = await otherProcess();
    try {
      const held = other.proxy.holdNext('insert', 'notes');
      const dying = runTransactionsImport(
        other.ctx,
        await other.target(request, validateTransactionsImport),
        {
          checkPreviouslyAdded: true,
          forceAddToCurrentStatement: true,
        },
      );
      dying.catch(() => undefined);
      await held;
      await other.close();
      await dying.catch(() => undefined);
    } finally {
      await other.close();
    }
    const retry = await env.post('transactions/create/', request);
    expect(retry.statusCode).toBe(201);
    expect(await redatingNotes(accountId)).toEqual([['F1', 'F2']]);
    expect(await reconciledNotes(external)).toBe(
      await env.t.app.db.models.Note.countDocuments({ accountId }),
    );
    expect(await reconciledNotes(external)).toBe(1);
    expect(await counts(external, 'transactions')).toEqual([3]);
  });
});
