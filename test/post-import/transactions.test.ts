import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Types } from 'mongoose';
import { processKey } from '../../src/storage/processes/process-key.js';
import { openDatabase } from '../../src/storage/database.js';
import { oneOffConnection } from '../../src/infra/redis.js';
import { AccountLocks } from '../../src/use-cases/post-import/account-lock.js';
import { importTransactions } from '../../src/use-cases/post-import/transactions.js';
import { createStorage } from '../../src/storage/index.js';
import { POST_IMPORT_LIMITS } from '../../src/schemas/post-import.js';
import { startHoldingProxy } from '../support/mongo-proxy.js';
import {
  defaultLedger,
  ledgerView,
  seedAccount,
  seedStagedOnly,
  setSupplierStatus,
  startPostImportEnv,
  type PostImportEnv,
} from './fixtures.js';

let env: PostImportEnv;

beforeAll(async () => {
  env = await startPostImportEnv('txns');
  await seedStagedOnly(env, 'EXT-STAGED');
});
afterAll(async () => env.close());

let seq = 0;
/** A fresh account per test, so balances and counts are easy to reason about. */
async function freshAccount(
  ledgers = [
    defaultLedger(),
    defaultLedger({ code: 'GAS', lastStatementBalanceMinor: 0, closingDate: '2025-03-31' }),
  ],
) {
  const external = `EXT-TX-${++seq}`;
  const { account } = await seedAccount(env, external, ledgers);
  return { external, accountId: account._id };
}

const payment = (id: string, date: string, amount: string | number = '42.00') => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'PAYMENT',
  payment_type: 'BANK_TRANSFER',
  reference: `REF-${id}`,
});
const charge = (id: string, date: string, amount: string | number = 3.5, note?: string) => ({
  transaction_id: id,
  transaction_date: date,
  amount,
  type: 'CHARGE',
  reason: 'LATE_PAYMENT_FEE',
  ...(note && { note }),
});

const importTxns = (
  external: string,
  transactions: unknown[],
  query = '',
  extra: Record<string, unknown> = {},
) =>
  env.post(`transactions/create/${query}`, {
    import_supplier: env.supplier,
    external_account_number: external,
    transactions,
    ...extra,
  });

async function ledgerState(accountId: Types.ObjectId, code = 'ELECTRICITY') {
  const ledger = await ledgerView(env, accountId, code);
  return { balanceMinor: ledger.balanceMinor, count: ledger.transactions.length };
}

async function storedTransaction(accountId: Types.ObjectId, transactionId: string) {
  const ledger = await ledgerView(env, accountId);
  return ledger.transactions.find((t) => t.transactionId === transactionId);
}

/** The balance a ledger must have: its last statement balance plus every stored transaction that moves it. */
async function balanceFromTransactions(accountId: Types.ObjectId, code = 'ELECTRICITY') {
  const ledger = await ledgerView(env, accountId, code);
  return ledger.transactions.reduce(
    (sum, t) => (t.origin === 'imported' || t.origin === 'current_statement' ? sum + t.signedMinor : sum),
    ledger.lastStatementBalanceMinor,
  );
}

describe('POST /v1/data-import/transactions/create/', () => {
  it('adds transactions to the first ledger, updates its balance exactly, and skips them on a repeat', async () => {
    const { external, accountId } = await freshAccount();
    const txns = [payment('T1', '2025-06-10'), charge('T2', '2025-06-12')];
    const res = await importTxns(external, txns);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      results: [
        { status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: txns[0] },
        { status: 'TRANSACTION_ADDED_TO_ACCOUNT', transaction_data: txns[1] },
      ],
    });
    // -15.00 + 42.00 - 3.50
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: 2350, count: 2 });
    const stored = await storedTransaction(accountId, 'T2');
    expect(stored).toMatchObject({
      amount: '3.50',
      signedMinor: -350,
      origin: 'imported',
      transactionDate: '2025-06-12',
    });
    expect(stored!.data).toEqual(txns[1]);

    const again = await importTxns(external, [...txns, payment('T3', '2025-06-13', '0.10')]);
    expect(again.statusCode).toBe(201);
    expect(again.json().results.map((r: { status: string }) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ADDED_TO_ACCOUNT',
    ]);
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: 2360, count: 3 });
  });

  it('targets the ledger named by ledger_code, and refuses an unknown one', async () => {
    const { external, accountId } = await freshAccount();
    const res = await importTxns(external, [charge('G1', '2025-06-10', '10.01')], '', { ledger_code: 'GAS' });
    expect(res.statusCode).toBe(201);
    expect(await ledgerState(accountId, 'GAS')).toEqual({ balanceMinor: -1001, count: 1 });
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500, count: 0 });

    const unknown = await importTxns(external, [charge('G2', '2025-06-10')], '', { ledger_code: 'WATER' });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({
      code: 'ledger_not_found',
      errors: [{ attr: 'ledger_code', code: 'ledger_not_found' }],
    });
  });

  it('with check_previously_added=false refuses a repeated id and writes nothing of the batch', async () => {
    const { external, accountId } = await freshAccount();
    await importTxns(external, [payment('R1', '2025-06-10')]);
    const before = await ledgerState(accountId);
    const res = await importTxns(
      external,
      [payment('R2', '2025-06-11'), payment('R1', '2025-06-10')],
      '?check_previously_added=false',
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      status: 'TRANSACTION_IMPORT_ERROR',
      error_detail: 'Transaction R1 already exists on the account.',
      transaction_data: payment('R1', '2025-06-10'),
    });
    expect(await ledgerState(accountId)).toEqual(before);
  });

  it('re-dates a transaction dated before the open period when forced (the default), with its note and one pinned note', async () => {
    const { external, accountId } = await freshAccount();
    const res = await importTxns(external, [
      charge('OLD1', '2025-04-15', '5.00', 'Fee from old system'),
      charge('OLD2', '2025-05-31', 1),
      payment('NEW', '2025-06-02'),
    ]);
    expect(res.statusCode).toBe(201);
    const [old1, old2, fresh] = res.json().results;
    expect(old1.status).toBe('TRANSACTION_ADDED_TO_ACCOUNT');
    expect(old1.transaction_data).toMatchObject({ transaction_id: 'OLD1', transaction_date: '2025-06-01' });
    expect(old1.transaction_data.note).toBe(
      'Fee from old system (Originally dated 2025-04-15; re-dated to 2025-06-01, the first day of the open statement period, on import.)',
    );
    expect(old2.transaction_data.transaction_date).toBe('2025-06-01');
    expect(fresh.transaction_data).toEqual(payment('NEW', '2025-06-02'));

    const stored = await storedTransaction(accountId, 'OLD1');
    expect(stored).toMatchObject({ transactionDate: '2025-06-01', originalTransactionDate: '2025-04-15' });
    expect(stored?.note).toContain('Originally dated 2025-04-15');

    const pinned = await env.t.app.db.models.Note.find({ accountId, origin: 'system' }).lean();
    expect(pinned).toHaveLength(1);
    expect(pinned[0]).toMatchObject({ isPinned: true });
    expect(pinned[0]!.body).toContain('OLD1, OLD2');
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500 - 500 - 100 + 4200, count: 3 });

    // A repeat adds neither transactions nor a second pinned note.
    await importTxns(external, [
      charge('OLD1', '2025-04-15', '5.00', 'Fee from old system'),
      charge('OLD2', '2025-05-31', 1),
    ]);
    expect(await env.t.app.db.models.Note.countDocuments({ accountId, origin: 'system' })).toBe(1);
  });

  it('without force refuses the batch with the dedicated 400 body and leaves the ledger untouched', async () => {
    const { external, accountId } = await freshAccount();
    await importTxns(external, [payment('OK0', '2025-06-05')]);
    const before = await ledgerState(accountId);
    const late = charge('LATE', '2025-05-20', '9.99');
    const res = await importTxns(
      external,
      [payment('OK1', '2025-06-10'), late, charge('LATE2', '2025-01-01')],
      '?force_add_to_current_statement=false',
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      status: 'TRANSACTION_IMPORT_ERROR',
      error_detail:
        'Transaction LATE is dated 2025-05-20, before the open statement period of ledger ELECTRICITY, which starts on 2025-06-01.',
      transaction_data: late,
    });
    expect(await ledgerState(accountId)).toEqual(before);
    expect(before).toEqual({ balanceMinor: 2700, count: 1 });
    expect(await env.t.app.db.models.Note.countDocuments({ accountId })).toBe(0);
  });

  it('with dry_run reports what would happen and writes nothing', async () => {
    const { external, accountId } = await freshAccount();
    const res = await importTxns(external, [charge('D1', '2025-04-01')], '', { dry_run: true });
    expect(res.statusCode).toBe(200);
    expect(res.json().results).toEqual([
      {
        status: 'TRANSACTION_ADDED_TO_ACCOUNT',
        transaction_data: expect.objectContaining({ transaction_id: 'D1', transaction_date: '2025-06-01' }),
      },
    ]);
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500, count: 0 });
    expect(await env.t.app.db.models.Note.countDocuments({ accountId })).toBe(0);
  });

  it('adds each transaction exactly once when 10 identical requests race, and the balance stays exact', async () => {
    const { external, accountId } = await freshAccount();
    const txns = Array.from({ length: 20 }, (_, i) =>
      i % 2 ? payment(`C${i}`, '2025-06-10', '1.11') : charge(`C${i}`, '2025-05-01', '0.37'),
    );
    const responses = await Promise.all(Array.from({ length: 10 }, () => importTxns(external, txns)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
    const added = responses
      .flatMap((r) => r.json().results)
      .filter((r: { status: string }) => r.status === 'TRANSACTION_ADDED_TO_ACCOUNT');
    expect(added).toHaveLength(20);
    // 10 payments of 1.11 and 10 charges of 0.37 on top of -15.00.
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500 + 1110 - 370, count: 20 });
    expect(await balanceFromTransactions(accountId)).toBe(-1500 + 1110 - 370);
    expect(await env.t.app.db.models.Note.countDocuments({ accountId, origin: 'system' })).toBe(1);
  });

  it('loses no balance update when a writer outlives its lock: the lease is taken away while it is stalled before its write', async () => {
    const { external, accountId } = await freshAccount();
    await importTxns(external, [payment('S0', '2025-06-10', '1.00')]);
    // Writer A: the import code on a connection of its own, through a proxy that stalls its journal insert.
    const mongo = new URL(env.t.config.MONGO_URL);
    const proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
    const db = await openDatabase({ ...env.t.config, MONGO_URL: proxy.url(mongo.pathname.slice(1)) });
    // As another process: its own Redis connection too (writers of one process also queue in that process).
    const redis = oneOffConnection(env.t.config);
    const locks = new AccountLocks(redis, env.t.config.QUEUE_PREFIX);
    try {
      const held = proxy.holdNext('insert', 'ledger_journal');
      const slow = importTransactions(
        createStorage(db, { config: env.t.config }),
        locks,
        {
          accountId,
          ledgerCode: undefined,
          transactions: [
            { ...payment('SA', '2025-06-11', '0.25'), type: 'PAYMENT' as const, amount: '0.25' },
          ],
          raws: [payment('SA', '2025-06-11', '0.25')],
          checkPreviouslyAdded: true,
          forceAddToCurrentStatement: true,
          dryRun: false,
        },
        new Date(),
      );
      await held;
      // A has read the head and holds the lock; the lock vanishes under it (a failover, a lease that ran out).
      expect(await env.t.app.redis.del(locks.key(accountId))).toBe(1);
      // Writer B goes through the API meanwhile, takes the lock and writes.
      const fast = await importTxns(external, [charge('SB', '2025-06-12', '0.40')]);
      expect(fast.statusCode).toBe(201);
      proxy.release();
      const outcome = await slow;
      expect(outcome).toMatchObject({ ok: true, results: [{ status: 'TRANSACTION_ADDED_TO_ACCOUNT' }] });
    } finally {
      proxy.release();
      await db.close();
      await proxy.close();
      redis.disconnect();
    }
    // Both writes count, once each: -15.00 + 1.00 + 0.25 - 0.40.
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500 + 100 + 25 - 40, count: 3 });
    expect(await balanceFromTransactions(accountId)).toBe(-1500 + 100 + 25 - 40);
  });

  it('writes nothing for a batch that fails, not even its re-dating note', async () => {
    const { external, accountId } = await freshAccount();
    await importTxns(external, [payment('F2', '2025-06-10')]);
    const before = await env.t.app.storage.journal.history(accountId);
    // F1 would be re-dated (with a pinned note), but F2 is already there and may not be.
    const res = await importTxns(
      external,
      [charge('F1', '2025-05-01', '1.00'), payment('F2', '2025-06-10')],
      '?check_previously_added=false',
    );
    expect(res.statusCode).toBe(400);
    const after = await env.t.app.storage.journal.history(accountId);
    expect(after?.head.seq).toBe(before?.head.seq);
    expect(await env.t.app.db.models.Note.countDocuments({ accountId })).toBe(0);
  });

  it('refuses more transactions than one request may carry with too_many_items, writing nothing', async () => {
    const { external, accountId } = await freshAccount();
    const many = Array.from({ length: POST_IMPORT_LIMITS.transactions + 1 }, (_, i) =>
      payment(`MANY-${i}`, '2025-06-10', '0.01'),
    );
    const res = await importTxns(external, many);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: 'request_failed_validation',
      errors: [{ code: 'too_many_items', attr: 'transactions' }],
    });
    expect(await ledgerState(accountId)).toEqual({ balanceMinor: -1500, count: 0 });
    const limit = await importTxns(external, many.slice(0, POST_IMPORT_LIMITS.transactions));
    expect(limit.statusCode).toBe(201);
  });

  it('answers 404 for an account whose creation has not marked its process imported', async () => {
    const { external } = await freshAccount();
    await env.t.app.db.models.AccountImportProcess.updateOne(
      { _id: processKey(env.supplier, external) },
      { $set: { krakenAccountNumber: null } },
    );
    const res = await importTxns(external, [payment('H1', '2025-06-10')]);
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('account_not_found');
  });

  it('answers 400 with every validation error, 404 for unknown or staged-only accounts, 400 when the supplier is not Ongoing', async () => {
    const { external } = await freshAccount();
    const invalid = await importTxns(external, [
      { ...payment('V1', '2099-01-01'), amount: '-1' },
      { transaction_id: 'V1', type: 'REFUND' },
    ]);
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().code).toBe('request_failed_validation');
    expect(invalid.json().errors.map((e: { attr: string }) => e.attr)).toEqual(
      expect.arrayContaining([
        'transactions.0.amount',
        'transactions.0.transaction_date',
        'transactions.1.type',
      ]),
    );
    const badFlag = await importTxns(
      external,
      [payment('V2', '2025-06-10')],
      '?force_add_to_current_statement=maybe',
    );
    expect(badFlag.statusCode).toBe(400);
    expect(badFlag.json().code).toBe('request_failed_validation');

    for (const ext of ['EXT-NOPE', 'EXT-STAGED']) {
      const res = await importTxns(ext, [payment('X', '2025-06-10')]);
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('account_not_found');
    }
    await setSupplierStatus(env, 'Paused');
    try {
      const res = await importTxns(external, [payment('P', '2025-06-10')]);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('import_supplier_migration_not_ongoing');
    } finally {
      await setSupplierStatus(env, 'Ongoing');
    }
  });
});
