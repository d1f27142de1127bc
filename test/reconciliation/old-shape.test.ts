import type { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteDedupKey } from '../../src/domain/reconciliation/note-keys.js';
import { noteIdFor } from '../../src/storage/models/record-ids.js';
import type { JournalRecords, StoredTransaction } from '../../src/storage/journal/journal-records.js';
import { insertNotes } from '../../src/storage/records/notes.js';
import { insertActiveInstruction } from '../../src/storage/records/payment-instructions.js';
import { seedAccount, startPostImportEnv, type PostImportEnv } from '../post-import/fixtures.js';
import { independentDigest, reconciliationFor } from './support.js';

// Accounts written before the journal kept reconciliation figures: entries without a summary, ledgers without
// counts or digests, notes counted nowhere. Their figures are folded from their history once, then kept.

let env: PostImportEnv;

beforeAll(async () => {
  env = await startPostImportEnv('reconold');
});
afterAll(async () => env?.close());

const tx = (
  id: string,
  ledgerCode: string,
  signedMinor: number,
  origin: StoredTransaction['origin'],
  billingDocument: string | null = null,
): StoredTransaction => ({
  transactionId: id,
  ledgerCode,
  transactionDate: '2025-04-01',
  originalTransactionDate: null,
  type: signedMinor >= 0 ? 'PAYMENT' : 'CHARGE',
  amount: (Math.abs(signedMinor) / 100).toFixed(2),
  signedMinor,
  origin,
  billingDocument,
  note: null,
  data: {},
});

/** An old-shape ledger state: balances only. */
const ledgerState = (
  code: string,
  position: number,
  balanceMinor: number,
  billingImportKey: string | null = null,
) => ({
  code,
  position,
  lastStatementBalanceMinor: -1500,
  lastStatementClosingDate: '2025-05-31',
  openPeriodStart: '2025-06-01',
  balanceMinor,
  billingImportKey,
});

/** Replaces the account's journal with entries in the shape written before the figures were kept. */
async function writeOldJournal(accountId: Types.ObjectId) {
  const { JournalEntry } = env.t.app.db.models;
  const journal = env.t.app.storage.journal;
  await JournalEntry.deleteMany({
    _id: { $in: [0, 1, 2, 3].map((seq) => `${accountId.toHexString()}:${seq}`) },
  });
  const statement = (id: string) => ({
    statementId: id,
    billPeriodFromDate: '2025-04-01',
    billPeriodToDate: '2025-04-30',
    issuedDate: null,
    number: null,
    grossAmountMinor: null,
    supplyType: null,
    documentLocation: null,
    origin: 'account_payload' as const,
  });
  const entries: Array<{
    kind: 'opened' | 'transactions' | 'billing' | 'statements';
    ledgers: object[];
    records: JournalRecords;
  }> = [
    {
      kind: 'opened',
      ledgers: [ledgerState('ELECTRICITY', 0, -1400), ledgerState('GAS', 1, -1500)],
      records: {
        transactions: [
          tx('OLD-H1', 'ELECTRICITY', -2000, 'historical_statement'),
          tx('OLD-H2', 'ELECTRICITY', 500, 'historical_statement'),
          tx('OLD-C1', 'ELECTRICITY', 100, 'current_statement'),
          tx('OLD-G1', 'GAS', -1500, 'historical_statement'),
        ],
        statements: [statement('OLD-ST-1')],
      },
    },
    {
      kind: 'transactions',
      ledgers: [ledgerState('ELECTRICITY', 0, -1400 + 250 - 75), ledgerState('GAS', 1, -1500)],
      records: {
        transactions: [
          tx('OLD-I1', 'ELECTRICITY', 250, 'imported'),
          tx('OLD-I2', 'ELECTRICITY', -75, 'imported'),
        ],
      },
    },
    {
      kind: 'billing',
      ledgers: [ledgerState('ELECTRICITY', 0, -1225), ledgerState('GAS', 1, -1500, 'k')],
      records: {
        billingDocuments: [
          {
            ledgerCode: 'GAS',
            identifier: 'OLD-BD',
            documentType: 'ITEM_BASED',
            issuedDate: '2025-01-01',
            billPeriodFromDate: null,
            billPeriodToDate: null,
          },
        ],
        transactions: [
          tx('OLD-B1', 'GAS', -900, 'billing_document', 'OLD-BD'),
          tx('OLD-B2', 'GAS', 900, 'additional_historical'),
        ],
      },
    },
    {
      kind: 'statements',
      ledgers: [ledgerState('ELECTRICITY', 0, -1225), ledgerState('GAS', 1, -1500, 'k')],
      records: { statements: [{ ...statement('OLD-ST-2'), origin: 'historical_import' as const }] },
    },
  ];
  const keysOf = (records: JournalRecords) => [
    ...(records.transactions ?? []).map((t) => `t:${t.transactionId}`),
    ...(records.statements ?? []).map((s) => `s:${s.statementId}`),
  ];
  const docs = entries.map((e, seq) =>
    // No summary: the shape of an entry written before it existed.
    journal.entryDocument(
      accountId,
      seq,
      e.kind,
      { ledgers: e.ledgers as never, keys: keysOf(e.records), records: e.records },
      new Date(),
    ),
  );
  await JournalEntry.insertMany(docs);
}

const notesOf = (accountId: Types.ObjectId, bodies: string[]) =>
  bodies.map((body) => {
    const { dedupKey, contentHash } = noteDedupKey(body, [], '2025-03-01T00:00:00Z');
    return {
      _id: noteIdFor(accountId, dedupKey),
      accountId,
      dedupKey,
      contentHash,
      body,
      documentPaths: [],
      noteCreatedAt: new Date('2025-03-01T00:00:00Z'),
      isPinned: false,
      unpinAt: null,
      origin: 'note_import' as const,
    };
  });

describe('an account written before the figures were kept', () => {
  it('reconciles: its figures are folded from its history once, then kept up to date as any', async () => {
    const { account } = await seedAccount(env, 'OLD-1');
    const { models } = env.t.app.db;
    await writeOldJournal(account._id);
    await insertNotes(models, notesOf(account._id, ['Nota antigua uno.', 'Nota antigua dos.']), new Date());
    await insertActiveInstruction(models, account._id, {
      vendor: 'SIMULATED',
      reference: 'sim_ok_old',
      type: 'CARD',
      vendorDetails: {},
    });
    // A process that has not read this account before (the app's own cache never saw the old entries).
    env.t.app.storage.journal['heads'].clear();

    const recon = reconciliationFor(env.t, env.headers);
    const first = await recon.get(env.supplier, 'OLD-1');
    expect(first.statusCode, first.body).toBe(200);
    const electricity = [
      { id: 'OLD-H1', cents: -2000n },
      { id: 'OLD-H2', cents: 500n },
      { id: 'OLD-C1', cents: 100n },
      { id: 'OLD-I1', cents: 250n },
      { id: 'OLD-I2', cents: -75n },
    ];
    const gas = [
      { id: 'OLD-G1', cents: -1500n },
      { id: 'OLD-B1', cents: -900n },
      { id: 'OLD-B2', cents: 900n },
    ];
    const expected = {
      import_supplier_code: env.supplier,
      external_account_number: 'OLD-1',
      kraken_account_number: expect.stringMatching(/^A-[0-9A-F]{8}$/),
      as_of: expect.any(String),
      ledgers: [
        {
          ledger_code: 'ELECTRICITY',
          balance: '-12.25',
          last_statement_balance: '-15.00',
          last_statement_closing_date: '2025-05-31',
          transactions: {
            count: 5,
            digest: independentDigest('ELECTRICITY', electricity),
            by_origin: {
              historical_statement: 2,
              current_statement: 1,
              imported: 2,
              billing_document: 0,
              additional_historical: 0,
            },
          },
          billing_documents: 0,
        },
        {
          ledger_code: 'GAS',
          balance: '-15.00',
          last_statement_balance: '-15.00',
          last_statement_closing_date: '2025-05-31',
          transactions: {
            count: 3,
            digest: independentDigest('GAS', gas),
            by_origin: {
              historical_statement: 1,
              current_statement: 0,
              imported: 0,
              billing_document: 1,
              additional_historical: 1,
            },
          },
          billing_documents: 1,
        },
      ],
      statements: 2,
      notes: 2,
      payment_instruction: { vendor: 'SIMULATED', status: 'ACTIVE' },
    };
    expect(first.json()).toEqual(expected);

    // Folded once: one `figures` entry appended (with the notes' keys), and the head hint on it.
    const entries = () =>
      models.JournalEntry.find({ accountId: account._id }, { seq: 1, kind: 1 }).sort({ seq: 1 }).lean();
    expect((await entries()).map((e) => e.kind)).toEqual([
      'opened',
      'transactions',
      'billing',
      'statements',
      'figures',
    ]);
    expect((await models.JournalHead.findById(account._id.toHexString()).lean())?.seq).toBe(4);
    env.t.app.storage.journal['heads'].clear();
    expect((await recon.get(env.supplier, 'OLD-1')).json()).toEqual(expected);
    expect(await entries()).toHaveLength(5);

    // From here on as any account: an old note sent again is not counted twice; new data moves the figures.
    const notes = await env.post('notes/create/', {
      import_supplier: env.supplier,
      external_account_number: 'OLD-1',
      notes: [
        { body: 'Nota antigua uno.', created_at: '2025-03-01T00:00:00Z' },
        { body: 'Nota nueva.', created_at: '2025-07-01T00:00:00Z' },
      ],
    });
    expect(notes.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_CREATION_SUCCESS',
    ]);
    const added = await env.post('transactions/create/', {
      import_supplier: env.supplier,
      external_account_number: 'OLD-1',
      transactions: [
        {
          transaction_id: 'NEW-1',
          transaction_date: '2025-06-15',
          amount: '3.33',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        },
      ],
    });
    expect(added.statusCode).toBe(201);
    const after = (await recon.get(env.supplier, 'OLD-1')).json();
    expect(after.notes).toBe(3);
    expect(after.ledgers[0]).toEqual({
      ...expected.ledgers[0],
      balance: '-8.92',
      transactions: {
        count: 6,
        digest: independentDigest('ELECTRICITY', [...electricity, { id: 'NEW-1', cents: 333n }]),
        by_origin: { ...expected.ledgers[0]!.transactions.by_origin, imported: 3 },
      },
    });
  });

  it('gets its figures before a writer decides, when a write comes first', async () => {
    const { account } = await seedAccount(env, 'OLD-2');
    const { models } = env.t.app.db;
    await writeOldJournal(account._id);
    env.t.app.storage.journal['heads'].clear();
    const res = await env.post('historical-statements/create/', {
      import_supplier: env.supplier,
      external_account_number: 'OLD-2',
      statements: [
        {
          bill_period_from_date: '2025-02-01',
          bill_period_to_date: '2025-02-28',
          statement_id: 'OLD-ST-3',
          issued_date: '2025-03-02',
          number: 'F-3',
          gross_amount: 100,
        },
      ],
    });
    expect(res.statusCode, res.body).toBe(201);
    const kinds = (
      await models.JournalEntry.find({ accountId: account._id }, { kind: 1 }).sort({ seq: 1 }).lean()
    ).map((e) => e.kind);
    expect(kinds).toEqual(['opened', 'transactions', 'billing', 'statements', 'figures', 'statements']);
    const body = (await reconciliationFor(env.t, env.headers).get(env.supplier, 'OLD-2')).json();
    expect([body.statements, body.notes, body.ledgers[1].billing_documents]).toEqual([3, 0, 1]);
  });
});
