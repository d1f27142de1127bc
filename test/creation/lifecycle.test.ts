import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payloadHash } from '../../src/storage/processes/import-processes.js';
import { accountIdFor } from '../../src/storage/records/created-accounts.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  expectedCounts,
  recordCounts,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  type Api,
  type TestWorkers,
} from './support.js';

let t: TestApp;
let api: Api;
let workers: TestWorkers;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'lifecycle' } });
  headers = (await setupTenant(t)).headers;
  api = apiFor(t, headers);
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

describe('stage', () => {
  it('answers 201 the first time and 200 when the staged data is replaced', async () => {
    const first = await api.stage(accountPayload('STG-1'));
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ import_supplier: SUPPLIER, external_account_number: 'STG-1' });
    const again = await api.stage({ ...accountPayload('STG-1'), billing_name: 'Otro Nombre' });
    expect(again.statusCode).toBe(200);
    const stored = await t.app.storage.processes.loadStaged(processKey(SUPPLIER, 'STG-1'));
    expect(JSON.parse(stored!.text).billing_name).toBe('Otro Nombre');
    // The process document itself stays small: the payload lives in its own collection.
    const process = await t.app.db.models.AccountImportProcess.findById(processKey(SUPPLIER, 'STG-1')).lean();
    expect(process).toMatchObject({ importSupplier: SUPPLIER, externalAccountNumber: 'STG-1' });
    expect(process).not.toHaveProperty('stagedPayload');
    expect((await api.status('STG-1')).json()).toEqual({ status: 'UNKNOWN', kraken_account_number: '' });
  });

  it('stores the payload as the very text it received', async () => {
    // Indented and with an escaped character: kept byte for byte.
    const text = JSON.stringify(accountPayload('STG-TEXT'), null, 2).replace(
      '"DOMESTIC"',
      '"DOMESTI\\u0043"',
    );
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/create-or-update/',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: text,
    });
    expect(res.statusCode).toBe(201);
    const stored = await t.app.storage.processes.loadStaged(processKey(SUPPLIER, 'STG-TEXT'));
    expect(stored!.text).toBe(text);
  });

  it('refuses invalid data with every error and stores nothing', async () => {
    const bad = { ...accountPayload('STG-BAD'), billing_postcode: '1', surprise: true };
    const res = await api.stage(bad);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('account_failed_validation');
    expect(res.json().errors.map((e: { attr: string }) => e.attr)).toEqual(
      expect.arrayContaining(['billing_postcode', 'surprise']),
    );
    expect(
      await t.app.db.models.AccountImportProcess.exists({ externalAccountNumber: 'STG-BAD' }),
    ).toBeNull();
  });

  it('converges concurrent first stages of one account on one process with one 201', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => api.stage(accountPayload('STG-RACE'))));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(
      await t.app.db.models.AccountImportProcess.countDocuments({ externalAccountNumber: 'STG-RACE' }),
    ).toBe(1);
  });

  it('refuses a skipped account, and a Paused or Complete supplier', async () => {
    await t.ops.skipAccount(SUPPLIER, 'STG-SKIP');
    const skipped = await api.stage(accountPayload('STG-SKIP'));
    expect(skipped.statusCode).toBe(400);
    expect(skipped.json()).toMatchInlineSnapshot(`
      {
        "code": "account_import_process_skipped",
        "detail": "The account import process is marked to be skipped.",
        "errors": [],
      }
    `);
    await api.stage(accountPayload('STG-PAUSE'));
    for (const status of ['Paused', 'Complete']) {
      await t.ops.setSupplierStatus(SUPPLIER, status);
      try {
        const stage = await api.stage(accountPayload('STG-PAUSE'));
        const create = await api.create('STG-PAUSE');
        for (const res of [stage, create]) {
          expect(res.statusCode).toBe(400);
          expect(res.json()).toEqual({
            detail: `Migrations for import supplier ${SUPPLIER} are ${status}.`,
            code: 'import_supplier_migration_not_ongoing',
            errors: [],
          });
        }
      } finally {
        await t.ops.setSupplierStatus(SUPPLIER, 'Ongoing');
      }
    }
    const create = await api.create('STG-SKIP');
    expect(create.json().code).toBe('account_import_process_skipped');
  });
});

describe('create', () => {
  it('resumes an interrupted creation from the payload it started from, even after a re-stage', async () => {
    expect((await api.stage(accountPayload('RSM-1'))).statusCode).toBe(201);
    const key = processKey(SUPPLIER, 'RSM-1');
    const original = (await t.app.storage.processes.loadStaged(key))!.text;
    // What a worker killed right after inserting the account leaves: the account, nothing else.
    const { models } = t.app.db;
    const process = await models.AccountImportProcess.findById(key).orFail().lean();
    const team = await models.OperationsTeam.findOne().orFail().lean();
    await models.Account.create({
      _id: accountIdFor(key),
      number: 'A-0000RSM1',
      organisationId: process.organisationId,
      importSupplier: SUPPLIER,
      externalAccountNumber: 'RSM-1',
      processId: key,
      operationsTeamId: team._id,
      accountType: 'DOMESTIC',
      billingName: 'María García López',
      sourceHash: payloadHash(original),
    });
    // The account is re-staged meanwhile with other ledgers.
    const changed = accountPayload('RSM-1');
    changed.ledgers = [changed.ledgers[1]!];
    expect((await api.stage(changed)).statusCode).toBe(200);

    const created = await api.create('RSM-1');
    expect(created.statusCode).toBe(201);
    expect(created.json().kraken_account_number).toBe('A-0000RSM1');
    const history = await t.app.storage.journal.history(accountIdFor(key));
    // The ledgers of the payload the account was made from, not the re-staged one's.
    expect(history!.head.ledgers.map((l) => l.code)).toEqual(['ELECTRICITY', 'GAS']);
    expect(await recordCounts(t.app, 'RSM-1')).toEqual(expectedCounts());
  });

  it('creates the account and every record, then refuses a second create and a stage with both numbers', async () => {
    expect((await api.stage(accountPayload('CRT-1'))).statusCode).toBe(201);
    const res = await api.create('CRT-1');
    expect(res.statusCode).toBe(201);
    const number = res.json().kraken_account_number as string;
    expect(number).toMatch(/^A-[0-9A-F]{8}$/);
    expect((await api.status('CRT-1')).json()).toEqual({
      status: 'COMPLETED',
      kraken_account_number: number,
    });
    expect(await recordCounts(t.app, 'CRT-1')).toEqual(expectedCounts());

    const { models } = t.app.db;
    const account = await models.Account.findOne({ number }).lean();
    expect(account).toMatchObject({
      externalAccountNumber: 'CRT-1',
      billingPostcode: '28013',
      accountType: 'DOMESTIC',
    });
    const history = await t.app.storage.journal.history(account!._id);
    const ledger = history!.head.ledgers.find((l) => l.code === 'ELECTRICITY');
    expect(ledger).toMatchObject({
      position: 0,
      lastStatementBalanceMinor: -1200,
      balanceMinor: 550,
      openPeriodStart: '2025-04-01',
    });
    const tx = history!.transactions.find((t) => t.transactionId === 'ELEC-H-001');
    expect(tx).toMatchObject({ amount: '59.65', signedMinor: -5965, origin: 'historical_statement' });
    // Not kept again: the payload the account was created from holds it exactly as received (a JSON number
    // stays a number), under the hash the account records.
    expect(tx).not.toHaveProperty('data');
    const source = await t.app.storage.processes.loadStaged(
      processKey(SUPPLIER, 'CRT-1'),
      account!.sourceHash!,
    );
    expect(JSON.parse(source!.text).ledgers[0].historical_statement_transactions[0]).toEqual(
      accountPayload('x').ledgers[0]!.historical_statement_transactions[0],
    );
    const statement = history!.statements.find((st) => st.statementId === 'ST-2025-01');
    expect(statement!.documentLocation).toBe(
      `migration-documents/migrations/acme_energia/statements/2025/01/EXT-000123.pdf`,
    );

    const again = await api.create('CRT-1');
    expect(again.statusCode).toBe(400);
    expect(again.json()).toEqual({
      detail: 'The account has already been imported.',
      code: 'account_import_process_already_imported',
      errors: [],
      external_account_number: 'CRT-1',
      kraken_account_number: number,
    });
    const restage = await api.stage(accountPayload('CRT-1'));
    expect(restage.statusCode).toBe(400);
    expect(restage.json()).toMatchObject({
      code: 'account_import_process_already_imported',
      kraken_account_number: number,
    });
    const imported = (await api.list('imported')).json() as Array<{
      external_account_number: string;
      kraken_account_number: string;
    }>;
    expect(imported).toContainEqual(
      expect.objectContaining({ external_account_number: 'CRT-1', kraken_account_number: number }),
    );
  });

  it('rolls a dry run back: 400, nothing written, status and lists unchanged', async () => {
    await api.stage(accountPayload('DRY-1'));
    const before = { all: (await api.list('all')).json(), pending: (await api.list('pending')).json() };
    const accounts = await t.app.db.models.Account.countDocuments();
    const res = await api.create('DRY-1', { dry_run: true });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchInlineSnapshot(`
      {
        "code": "dry_run_rolled_back",
        "detail": "Account would import successfully. Rolled back due to dry run.",
        "errors": [],
      }
    `);
    expect((await api.status('DRY-1')).json()).toEqual({ status: 'UNKNOWN', kraken_account_number: '' });
    expect({ all: (await api.list('all')).json(), pending: (await api.list('pending')).json() }).toEqual(
      before,
    );
    expect(await t.app.db.models.Account.countDocuments()).toBe(accounts);
    expect(await recordCounts(t.app, 'DRY-1')).toEqual({
      accounts: 0,
      ledgers: 0,
      transactions: 0,
      notes: 0,
      statements: 0,
      journalEntries: 0,
    });
    // A real create afterwards still works.
    expect((await api.create('DRY-1')).statusCode).toBe(201);
  });

  it('answers the documented refusals: nothing staged, unknown team, invalid request, staged data no longer valid', async () => {
    const none = await api.create('NOPE-1');
    expect(none.statusCode).toBe(400);
    expect(none.json()).toEqual({
      detail: 'No staged data exists for this account.',
      code: 'import_process_does_not_exist',
      errors: [],
    });

    await api.stage(accountPayload('TEAM-1'));
    const team = await api.create('TEAM-1', { operations_team_name: 'No Such Team' });
    expect(team.json()).toEqual({
      detail: 'The operations team does not exist.',
      code: 'operations_team_name_does_not_exist',
      errors: [],
    });

    const invalid = await api.create('TEAM-1', { dry_run: 'yes', extra: 1 });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().code).toBe('request_failed_validation');
    expect(
      invalid
        .json()
        .errors.map((e: { attr: string }) => e.attr)
        .sort(),
    ).toEqual(['dry_run', 'extra']);

    const unknownSupplier = await api.create('TEAM-1', { import_supplier_code: 'OTHER' });
    expect(unknownSupplier.json().errors).toEqual([
      expect.objectContaining({ attr: 'import_supplier_code', code: 'import_supplier_not_found' }),
    ]);

    // Rules can change between staging and creation: staged data validated on other terms (another
    // fingerprint) is validated again by the worker, and what no longer passes is refused.
    await api.stage(accountPayload('STALE-1'));
    const stale = JSON.stringify({ ...accountPayload('STALE-1'), billing_postcode: 'ABC' });
    await stagedPayloadModel(t.app.db.conn).updateOne(
      { _id: processKey(SUPPLIER, 'STALE-1') },
      { $set: { payload: stale, validatedWith: 'the fingerprint of an earlier deployment' } },
    );
    const res = await api.create('STALE-1');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('account_failed_validation');
    expect(res.json().errors).toEqual([expect.objectContaining({ attr: 'billing_postcode' })]);
    // The worker's findings as codes and paths: no value of the payload in the answer, the job or the record.
    const [error] = res.json().errors as Array<{ code: string; attr: string; detail: string }>;
    expect(error!.detail).not.toContain('ABC');
    const process = await t.app.db.models.AccountImportProcess.findById(
      processKey(SUPPLIER, 'STALE-1'),
    ).lean();
    expect(JSON.parse(process!.creationRefusal!)).toEqual({
      code: 'account_failed_validation',
      errors: [{ code: error!.code, attr: 'billing_postcode' }],
    });
    expect((await api.status('STALE-1')).json().status).toBe('UNKNOWN');
  });

  it('lists pending and imported accounts, with optional keyset pagination', async () => {
    for (const ext of ['PG-A', 'PG-B', 'PG-C']) await api.stage(accountPayload(ext));
    const all = (await api.list('all')).json() as Array<{ external_account_number: string }>;
    const names = all.map((i) => i.external_account_number);
    expect(names).toEqual([...names].sort());
    const page = await api.list('pending', '?limit=2&after=PG-A');
    expect(page.json()).toEqual([
      { external_account_number: 'PG-B', kraken_account_number: null, account_created_at: null },
      { external_account_number: 'PG-C', kraken_account_number: null, account_created_at: null },
    ]);
    expect((await api.list('pending', '?limit=0')).statusCode).toBe(400);
  });
});
