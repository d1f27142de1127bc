import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { validationFingerprint } from '../../src/use-cases/creation/validation-fingerprint.js';
import { deploymentCatalogue, validationContextAt } from '../../src/domain/validation/deployment.js';
import { parseValidatedAccount, validateAccount } from '../../src/domain/validation/index.js';
import { buildCatalogue } from '../../src/vocabulary/catalogue.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { realisticAccountPayload } from '../domain/fixtures-realistic.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  accountPayload,
  apiFor,
  setupTenant,
  startTestWorkers,
  SUPPLIER,
  type Api,
  type TestWorkers,
} from './support.js';

// A creation validates its staged payload again only when what that validation depends on changed since it was
// staged (code, catalogue, region, day); on the same terms it only parses it.
let t: TestApp;
let api: Api;
let workers: TestWorkers | null = null;

beforeAll(async () => {
  // The web's catalogue accepts one more sales channel than the default.
  t = await startTestApp({
    env: { TEST_LABEL: 'validated-once', CATALOGUE_EXTRA: JSON.stringify({ sales_channel: ['KIOSK'] }) },
  });
  api = apiFor(t, (await setupTenant(t)).headers);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const kioskAccount = (external: string) => ({ ...accountPayload(external), sales_channel: 'KIOSK' });

describe('the fingerprint of a validation', () => {
  const catalogue = buildCatalogue();
  const at = new Date('2026-11-25T10:00:00Z');
  const base = validationFingerprint(validationContextAt(catalogue, 'ES', at));

  it('is the same on the same terms, and changes with the catalogue, the region and the day', () => {
    expect(
      validationFingerprint(validationContextAt(buildCatalogue(), 'ES', new Date('2026-11-25T23:59:59Z'))),
    ).toBe(base);
    expect(
      validationFingerprint(validationContextAt(buildCatalogue({ sales_channel: ['KIOSK'] }), 'ES', at)),
    ).not.toBe(base);
    expect(validationFingerprint(validationContextAt(catalogue, 'XX', at))).not.toBe(base);
    expect(
      validationFingerprint(validationContextAt(catalogue, 'ES', new Date('2026-11-26T00:00:00Z'))),
    ).not.toBe(base);
  });

  it('parsing an account that passed gives the data a full validation gives', () => {
    const payload = {
      ...realisticAccountPayload({ months: 42 }),
      import_supplier: 'X',
      external_account_number: 'E-1',
    };
    const ctx = validationContextAt(catalogue, 'ES', at);
    const full = validateAccount(payload, ctx);
    expect(full.ok).toBe(true);
    expect(parseValidatedAccount(payload, ctx)).toEqual(full);
    // Something that does not parse is validated in full: the same errors as validateAccount's.
    const broken = { ...payload, ledgers: 'none' };
    expect(parseValidatedAccount(broken, ctx)).toEqual(validateAccount(broken, ctx));
  });
});

describe('creation', () => {
  it('on the terms of the staging: created; after the catalogue lost the value: validated again and refused', async () => {
    workers = await startTestWorkers(t.config);
    expect((await api.stage(kioskAccount('FP-1'))).statusCode).toBe(201);
    // Staging kept the fingerprint of the validation it made, the one a worker with this config computes.
    const staged = await t.app.storage.processes.loadStaged(processKey(SUPPLIER, 'FP-1'));
    const supplier = await t.app.db.models.ImportSupplier.findOne({ code: SUPPLIER }).lean();
    expect(staged!.validatedWith).toBe(
      validationFingerprint(
        validationContextAt(deploymentCatalogue(t.config), supplier!.region, t.app.clock()),
      ),
    );
    const created = await api.create('FP-1');
    expect(created.statusCode, created.body).toBe(201);
    await workers.stop();

    // Workers deployed with the default catalogue: the staged KIOSK account is no longer valid there.
    const narrower: Config = { ...t.config, CATALOGUE_EXTRA: {} };
    workers = await startTestWorkers(narrower);
    expect((await api.stage(kioskAccount('FP-2'))).statusCode).toBe(201);
    const refused = await api.create('FP-2');
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({
      code: 'account_failed_validation',
      errors: [expect.objectContaining({ attr: 'sales_channel' })],
    });
  });
});
