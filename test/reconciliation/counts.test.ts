import type { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/storage/database.js';
import { noteDedupKey } from '../../src/domain/reconciliation/note-keys.js';
import { noteIdFor } from '../../src/storage/models/record-ids.js';
import { AccountLocks } from '../../src/use-cases/post-import/account-lock.js';
import { importNotes } from '../../src/use-cases/post-import/notes.js';
import { createStorage } from '../../src/storage/index.js';
import { LedgerJournal } from '../../src/storage/journal/ledger-journal.js';
import { depsOf } from '../../src/storage/journal/journal-deps.js';
import { insertActiveInstruction } from '../../src/storage/records/payment-instructions.js';
import { startHoldingProxy } from '../support/mongo-proxy.js';
import { seedAccount, startPostImportEnv, type PostImportEnv } from '../post-import/fixtures.js';
import { reconciliationFor } from './support.js';

// The account-level counts under retries, races and crashes: notes (their own documents, counted by the
// journal entry that follows them), the payment instruction, and the head hint reads start from.

let env: PostImportEnv;

beforeAll(async () => {
  env = await startPostImportEnv('reconcounts');
});
afterAll(async () => env?.close());

const read = async (external: string) => {
  const res = await reconciliationFor(env.t, env.headers).get(env.supplier, external);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as {
    notes: number;
    statements: number;
    payment_instruction: unknown;
    ledgers: unknown[];
  };
};
const postNotes = (external: string, notes: unknown[]) =>
  env.post('notes/create/', { import_supplier: env.supplier, external_account_number: external, notes });
const statuses = (res: { json(): unknown }) => (res.json() as Array<{ status: string }>).map((n) => n.status);

describe('the note count', () => {
  it('counts a note once however often and however concurrently it is sent', async () => {
    const { account } = await seedAccount(env, 'CNT-RACE');
    const notes = [
      { body: 'Cliente avisado del cambio.', created_at: '2025-06-01T10:00:00Z' },
      { body: 'Sin fecha, dos veces en la misma petición.' },
      { body: 'Sin fecha, dos veces en la misma petición.' },
    ];
    const answers = await Promise.all(Array.from({ length: 10 }, () => postNotes('CNT-RACE', notes)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(10).fill(201));
    expect((await read('CNT-RACE')).notes).toBe(2);
    // Sent again later, and the undated one alone (it matches the note there, whatever its date).
    expect(statuses(await postNotes('CNT-RACE', notes))).toEqual(Array(3).fill('NOTE_ALREADY_EXISTS'));
    expect(statuses(await postNotes('CNT-RACE', [notes[1]]))).toEqual(['NOTE_ALREADY_EXISTS']);
    expect((await read('CNT-RACE')).notes).toBe(2);
    expect(await env.t.app.db.models.Note.countDocuments({ accountId: account._id })).toBe(2);
  });

  it('loses no note to a crash between the note insert and its count: the retried request counts it, once', async () => {
    const { account } = await seedAccount(env, 'CNT-CRASH');
    const note = { body: 'Escrita justo antes de la caída.', created_at: '2025-06-02T08:00:00Z' };
    const mongo = new URL(env.t.config.MONGO_URL);
    const proxy = await startHoldingProxy({ host: mongo.hostname, port: Number(mongo.port) });
    const db = await openDatabase({
      ...env.t.config,
      MONGO_URL: proxy.url(mongo.pathname.slice(1)),
      MONGO_SERVER_SELECTION_TIMEOUT_MS: 500,
    });
    // A process writing the note dies while its journal insert (the count) is on the wire.
    const held = proxy.holdNext('insert', 'ledger_journal');
    const dying = importNotes(
      createStorage(db, { config: env.t.config }),
      new AccountLocks(env.t.app.redis, env.t.config.QUEUE_PREFIX),
      account._id,
      [note],
      (path) => path,
      new Date(),
    );
    dying.catch(() => undefined);
    await held;
    await proxy.close();
    await expect(dying).rejects.toThrow();
    await db.close().catch(() => undefined);

    // The note is there; the count does not name it yet (it never names a note that is not there).
    const { dedupKey } = noteDedupKey(note.body, [], note.created_at);
    expect(await env.t.app.db.models.Note.exists({ _id: noteIdFor(account._id, dedupKey) })).not.toBeNull();
    expect((await read('CNT-CRASH')).notes).toBe(0);

    // The client got no answer and sends the request again: the note is found, and counted now.
    expect(statuses(await postNotes('CNT-CRASH', [note]))).toEqual(['NOTE_ALREADY_EXISTS']);
    expect((await read('CNT-CRASH')).notes).toBe(1);
    expect(statuses(await postNotes('CNT-CRASH', [note]))).toEqual(['NOTE_ALREADY_EXISTS']);
    expect((await read('CNT-CRASH')).notes).toBe(1);
  });

  it('counts the note a transaction import adds when it re-dates transactions, once', async () => {
    await seedAccount(env, 'CNT-REDATE');
    const body = {
      import_supplier: env.supplier,
      external_account_number: 'CNT-REDATE',
      transactions: [
        {
          transaction_id: 'RD-1',
          transaction_date: '2025-05-02',
          amount: '1.00',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    };
    for (let i = 0; i < 3; i++) expect((await env.post('transactions/create/', body)).statusCode).toBe(201);
    expect((await read('CNT-REDATE')).notes).toBe(1);
  });
});

describe('the payment instruction', () => {
  it('is recorded by the retry when the process died between the instruction and its journal entry', async () => {
    const { account } = await seedAccount(env, 'CNT-PI');
    // The verification job's insert, and then nothing: its process died.
    const written = await insertActiveInstruction(env.t.app.db.models, account._id, {
      vendor: 'SIMULATED',
      reference: 'sim_ok_crash',
      type: 'CARD',
      vendorDetails: {},
    });
    expect(written.inserted).toBe(true);
    expect((await read('CNT-PI')).payment_instruction).toBeNull();
    // The client's retry finds the instruction active (no job runs) and its journal records it.
    const retried = await env.post('payment-instruction/create/', {
      import_supplier: env.supplier,
      external_account_number: 'CNT-PI',
      vendor: 'SIMULATED',
      reference: 'sim_ok_crash',
      type: 'CARD',
    });
    expect(retried.statusCode, retried.body).toBe(201);
    expect((await read('CNT-PI')).payment_instruction).toEqual({ vendor: 'SIMULATED', status: 'ACTIVE' });
    const entries = await env.t.app.db.models.JournalEntry.countDocuments({ accountId: account._id });
    await env.post('payment-instruction/create/', {
      import_supplier: env.supplier,
      external_account_number: 'CNT-PI',
      vendor: 'SIMULATED',
      reference: 'sim_ok_crash',
      type: 'CARD',
    });
    expect(await env.t.app.db.models.JournalEntry.countDocuments({ accountId: account._id })).toBe(entries);
  });
});

describe('the head hint', () => {
  const hintOf = async (accountId: Types.ObjectId) =>
    (await env.t.app.db.models.JournalHead.findById(accountId.toHexString()).lean())?.seq;
  const payment = (id: string) => ({
    transaction_id: id,
    transaction_date: '2025-06-10',
    amount: '1.00',
    type: 'PAYMENT',
    payment_type: 'BANK_TRANSFER',
  });
  const importOne = (external: string, id: string) =>
    env.post('transactions/create/', {
      import_supplier: env.supplier,
      external_account_number: external,
      transactions: [payment(id)],
    });

  it('follows the appends every fourth entry with $max, which never lowers it', async () => {
    const { account } = await seedAccount(env, 'CNT-HINT');
    expect(await hintOf(account._id)).toBeUndefined();
    for (let i = 1; i <= 3; i++) expect((await importOne('CNT-HINT', `H-${i}`)).statusCode).toBe(201);
    // Entries 1 to 3 cost no update of the hint; entry 4 raises it.
    expect(await hintOf(account._id)).toBeUndefined();
    expect((await importOne('CNT-HINT', 'H-4')).statusCode).toBe(201);
    expect(await hintOf(account._id)).toBe(4);
    // FerretDB v1 applies $max as MongoDB does.
    const { JournalHead } = env.t.app.db.models;
    await JournalHead.updateOne({ _id: account._id.toHexString() }, { $max: { seq: 1 } }, { upsert: true });
    expect(await hintOf(account._id)).toBe(4);
  });

  it('may lag: a reader probes forward from a stale hint to the head, and raises it', async () => {
    const { account } = await seedAccount(env, 'CNT-STALE');
    for (let i = 1; i <= 6; i++) await importOne('CNT-STALE', `S-${i}`);
    const before = await read('CNT-STALE');
    await env.t.app.db.models.JournalHead.updateOne({ _id: account._id.toHexString() }, { $set: { seq: 1 } });
    // A process that never wrote this account: no head of its own to start from.
    const cold = new LedgerJournal(env.t.app.db.models.JournalEntry, depsOf(env.t.app.db.models));
    const state = await cold.state(account._id);
    expect(state?.seq).toBe(6);
    expect(state?.ledgers[0]?.transactionCount).toBe(6);
    // It walked 5 entries past the hint (at least the stride): it raised the hint.
    expect(await hintOf(account._id)).toBe(6);
    expect(await read('CNT-STALE')).toEqual({ ...before, as_of: expect.any(String) });
  });

  it('makes one account cost the same reads for 1 journal entry and for 40 of 25 transactions each', async () => {
    const small = (await seedAccount(env, 'CNT-COST-SMALL')).account._id;
    const large = (await seedAccount(env, 'CNT-COST-LARGE')).account._id;
    for (let batch = 0; batch < 40; batch++) {
      const transactions = Array.from({ length: 25 }, (_, i) => payment(`L-${batch}-${i}`));
      const res = await env.post('transactions/create/', {
        import_supplier: env.supplier,
        external_account_number: 'CNT-COST-LARGE',
        transactions,
      });
      expect(res.statusCode).toBe(201);
    }
    const { JournalEntry, JournalHead } = env.t.app.db.models;
    const entryReads = vi.spyOn(JournalEntry, 'findById');
    const hintReads = vi.spyOn(JournalHead, 'findById');
    try {
      const reads = async (accountId: Types.ObjectId) => {
        entryReads.mockClear();
        hintReads.mockClear();
        const state = await new LedgerJournal(JournalEntry, depsOf(env.t.app.db.models)).state(accountId);
        return { entries: entryReads.mock.calls.length, hints: hintReads.mock.calls.length, state };
      };
      const a = await reads(small);
      const b = await reads(large);
      expect(b.state?.ledgers[0]?.transactionCount).toBe(1_000);
      expect(b.state?.seq).toBe(40);
      // The entry the hint names and the probe after it, whatever the history.
      expect({ entries: a.entries, hints: a.hints }).toEqual({ entries: 2, hints: 1 });
      expect({ entries: b.entries, hints: b.hints }).toEqual({ entries: 2, hints: 1 });
    } finally {
      entryReads.mockRestore();
      hintReads.mockRestore();
    }
  });
});
