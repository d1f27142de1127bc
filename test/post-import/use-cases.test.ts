import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Types } from 'mongoose';
import { pino } from 'pino';
import { createAccount } from '../../src/use-cases/creation/from-process.js';
import { stageAccount } from '../../src/use-cases/creation/staging.js';
import {
  validateNotesImport,
  validateTransactionsImport,
  type ValidationContext,
  type ValidationResult,
} from '../../src/domain/validation/index.js';
import { jobId } from '../../src/jobs/catalog.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { postImportContext, type PostImportContext } from '../../src/use-cases/post-import/context.js';
import { runNotesImport } from '../../src/use-cases/post-import/notes.js';
import { resolveTarget, type FindSupplier } from '../../src/use-cases/post-import/target.js';
import { runTransactionsImport } from '../../src/use-cases/post-import/transactions.js';
import type { VerifyOutcome } from '../../src/use-cases/post-import/outcomes.js';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';

// A post-import step runs without the HTTP layer: an account created by the creation code, then transactions
// and notes imported onto it through the use cases, with a context built on the test app's database, Redis
// and queues (no request is injected).
const ORG = 'Org Use Cases';
const SUPPLIER = 'SUP_USECASES';
const TEAM = 'Use Case Team';
const EXTERNAL = 'UC-1';
const COMPLETED = 'data_import.import_process.post_import.completed-v1';

let t: TestApp;
let ctx: PostImportContext;
let findSupplier: FindSupplier;
let accountId: Types.ObjectId;
let requests = 0;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'post_import_use_cases' } });
  const { models } = t.app.db;
  const { organisation } = await t.ops.createOrganisation(ORG);
  await t.ops.createSupplier(SUPPLIER, ORG, { documentRoot: 'migrations/use-cases' });
  await t.ops.ensureTeam(TEAM);
  const organisationId = new Types.ObjectId(organisation.id);
  findSupplier = (code) => t.app.storage.suppliers.find(code, organisationId);

  const staged = await stageAccount(t.app.storage, {
    organisationId,
    importSupplier: SUPPLIER,
    externalAccountNumber: EXTERNAL,
    payload: JSON.stringify({
      ...validAccountPayload(),
      import_supplier: SUPPLIER,
      external_account_number: EXTERNAL,
    }),
    now: new Date(),
  });
  expect(staged).toMatchObject({ status: 'created' });
  const team = await models.OperationsTeam.findOne({ name: TEAM }).orFail();
  const created = await createAccount(
    { storage: t.app.storage, config: t.config, clock: () => new Date() },
    {
      processId: processKey(SUPPLIER, EXTERNAL),
      operationsTeamId: team._id.toHexString(),
      dryRun: false,
      jobId: 'use-cases-create',
    },
  );
  if (!created.ok) throw new Error(`creation refused: ${JSON.stringify(created)}`);
  accountId = new Types.ObjectId(created.account_id);

  const queues = t.app.queues;
  ctx = postImportContext({
    storage: t.app.storage,
    redis: t.app.redis,
    config: t.config,
    clock: () => new Date(),
    webhooks: () => queues.queue('webhooks'),
    webhookProcess: t.app.webhooks,
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
});
afterAll(async () => t?.close());

/** A request as a step sees it: an id, the raw body and a logger. */
const request = (body: Record<string, unknown>) => ({
  id: `use-case-${++requests}`,
  body: { import_supplier: SUPPLIER, external_account_number: EXTERNAL, ...body },
  log: pino({ level: 'silent' }),
});

async function target<T extends { import_supplier: string; external_account_number: string }>(
  body: Record<string, unknown>,
  validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
) {
  const resolved = await resolveTarget(ctx, findSupplier, request(body), validate);
  if (!resolved.ok) throw new Error(`refused: ${JSON.stringify(resolved.refusal)}`);
  return resolved.target;
}

/** The post-import events recorded for the account, by resource. */
const recorded = async (resource: string) =>
  (await t.app.db.models.ImportEvent.find({ type: COMPLETED, externalAccountNumber: EXTERNAL }).lean())
    .map((e) => ({ eventId: e.eventId, data: JSON.parse(e.data) as { resource: string; count: number } }))
    .filter((e) => e.data.resource === resource);

describe('post-import use cases without the HTTP layer', () => {
  it('imports transactions onto the created account: the journal entry, the event and its relay', async () => {
    const body = {
      ledger_code: 'ELECTRICITY',
      transactions: [
        {
          transaction_id: 'UC-T1',
          transaction_date: '2025-04-20',
          amount: '10.00',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        },
        {
          transaction_id: 'UC-T2',
          transaction_date: '2025-04-21',
          amount: '1.25',
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    };
    const options = { checkPreviouslyAdded: true, forceAddToCurrentStatement: true };
    const first = await runTransactionsImport(ctx, await target(body, validateTransactionsImport), options);
    expect(first.ok && first.results.map((r) => r.status)).toEqual([
      'TRANSACTION_ADDED_TO_ACCOUNT',
      'TRANSACTION_ADDED_TO_ACCOUNT',
    ]);
    const history = await t.app.storage.journal.history(accountId);
    expect(
      history?.transactions
        .filter((tx) => tx.transactionId.startsWith('UC-'))
        .map((tx) => [tx.transactionId, tx.ledgerCode, tx.origin]),
    ).toEqual([
      ['UC-T1', 'ELECTRICITY', 'imported'],
      ['UC-T2', 'ELECTRICITY', 'imported'],
    ]);
    const events = await recorded('transactions');
    expect(events.map((e) => e.data.count)).toEqual([2]);
    // Nobody is subscribed: written dispatched (its writer read the endpoints first), and no job was queued.
    const stored = await t.app.db.models.ImportEvent.findOne({ eventId: events[0]!.eventId }).lean();
    expect(stored?.dispatched).toBe(true);
    expect(await t.app.queues.queue('webhooks').getJob(jobId('dispatch', events[0]!.eventId))).toBeFalsy();

    // The same request again: already there, and the same event.
    const again = await runTransactionsImport(ctx, await target(body, validateTransactionsImport), options);
    expect(again.ok && again.results.map((r) => r.status)).toEqual([
      'TRANSACTION_ALREADY_EXISTS',
      'TRANSACTION_ALREADY_EXISTS',
    ]);
    expect(await recorded('transactions')).toEqual(events);
  });

  it('imports a note onto the created account, its document under the supplier root, and its event', async () => {
    const note = {
      body: 'Imported without the HTTP layer.',
      created_at: '2025-06-01T09:15:00Z',
      document_paths: [{ document_path: 'notes/welcome.pdf' }],
    };
    const results = await runNotesImport(ctx, await target({ notes: [note] }, validateNotesImport));
    expect(results).toEqual([
      {
        created_at: '2025-06-01T09:15:00Z',
        body: 'Imported without the HTTP layer.',
        status: 'NOTE_CREATION_SUCCESS',
        document_paths: [{ document_path: 'notes/welcome.pdf' }],
      },
    ]);
    const stored = await t.app.db.models.Note.findOne({ accountId, body: note.body }).lean();
    expect(stored).toMatchObject({ origin: 'note_import', noteCreatedAt: new Date(note.created_at) });
    expect(stored?.documentPaths).toHaveLength(1);
    expect(stored?.documentPaths[0]).toContain('migrations/use-cases');
    expect((await recorded('notes')).map((e) => e.data.count)).toEqual([1]);
  });

  it('finds a created account once: later requests about it read neither its process nor its account', async () => {
    const { models } = t.app.db;
    const processReads = vi.spyOn(models.AccountImportProcess, 'findById');
    const accountReads = vi.spyOn(models.Account, 'findById');
    try {
      const notes = { notes: [{ body: 'Remembered.' }] };
      // An account never created is not remembered: looked up again on every request.
      const pending = async () =>
        resolveTarget(
          ctx,
          findSupplier,
          request({ ...notes, external_account_number: 'UC-STAGED' }),
          validateNotesImport,
        );
      expect(await pending()).toEqual({ ok: false, refusal: { code: 'account_not_found' } });
      expect(await pending()).toEqual({ ok: false, refusal: { code: 'account_not_found' } });
      expect(processReads).toHaveBeenCalledTimes(2);
      const first = await target(notes, validateNotesImport);
      processReads.mockClear();
      accountReads.mockClear();
      for (let i = 0; i < 3; i++)
        expect((await target(notes, validateNotesImport)).account).toEqual(first.account);
      expect(first.account._id.equals(accountId)).toBe(true);
      expect(processReads).not.toHaveBeenCalled();
      expect(accountReads).not.toHaveBeenCalled();
    } finally {
      processReads.mockRestore();
      accountReads.mockRestore();
    }
  });

  it('refuses at the common front: unknown supplier, paused supplier, invalid body, account not created', async () => {
    const resolve = (body: Record<string, unknown>) =>
      resolveTarget(ctx, findSupplier, request(body), validateNotesImport);
    const notes = { notes: [{ body: 'Refused.' }] };
    expect(await resolve({ ...notes, import_supplier: 'SUP_NOBODY' })).toEqual({
      ok: false,
      refusal: { code: 'import_supplier_not_found' },
    });
    expect(await resolve({ notes: 'not a list' })).toMatchObject({
      ok: false,
      refusal: { code: 'request_failed_validation', errors: [expect.objectContaining({ attr: 'notes' })] },
    });
    expect(await resolve({ ...notes, external_account_number: 'UC-NEVER-CREATED' })).toEqual({
      ok: false,
      refusal: { code: 'account_not_found' },
    });
    await t.ops.setSupplierStatus(SUPPLIER, 'Paused');
    try {
      expect(await resolve(notes)).toEqual({
        ok: false,
        refusal: {
          code: 'import_supplier_migration_not_ongoing',
          detail: `Migrations for import supplier ${SUPPLIER} are Paused.`,
        },
      });
    } finally {
      await t.ops.setSupplierStatus(SUPPLIER, 'Ongoing');
    }
  });
});
