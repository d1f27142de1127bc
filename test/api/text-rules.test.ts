import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { accountPayload, apiFor, setupTenant, SUPPLIER, type Api } from '../creation/support.js';

// One rule for the text the service accepts: control characters are refused at their field's path, identifiers
// are one key whatever their Unicode form, and every route takes every identifier the schemas take.
let t: TestApp;
let api: Api;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'text' } });
  headers = (await setupTenant(t)).headers;
  api = apiFor(t, headers);
});
afterAll(async () => t?.close());

const get = (url: string) => t.app.inject({ method: 'GET', url, headers });
const del = (url: string) => t.app.inject({ method: 'DELETE', url, headers });

describe('identifiers of up to 128 characters on every path route', () => {
  const long = 'L'.repeat(128);
  it('are staged, and found by the v1 status, the v2 status, events and cancel (no 414)', async () => {
    expect((await api.stage(accountPayload(long))).statusCode).toBe(201);
    expect((await api.status(long)).statusCode).toBe(200);
    expect((await get(`/v2/data-import/accounts/${SUPPLIER}/${long}/`)).statusCode).toBe(200);
    expect((await get(`/v2/data-import/accounts/${SUPPLIER}/${long}/events/`)).statusCode).toBe(200);
    // Nothing scheduled: the documented refusal, not the router's.
    const cancel = await del(`/v2/data-import/accounts/${SUPPLIER}/${long}/`);
    expect(cancel.statusCode).not.toBe(414);
    expect(cancel.json().code).toEqual(expect.any(String));
  });

  it('beyond 128: 400 request_failed_validation at the parameter, in the documented body', async () => {
    const tooLong = 'L'.repeat(129);
    for (const url of [
      `/v1/data-import/account-transfer-status/${SUPPLIER}/${tooLong}/`,
      `/v2/data-import/accounts/${SUPPLIER}/${tooLong}/`,
      `/v2/data-import/accounts/${SUPPLIER}/${tooLong}/events/`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'request_failed_validation',
        errors: [expect.objectContaining({ attr: expect.stringMatching(/external/) })],
      });
    }
    expect((await del(`/v2/data-import/accounts/${SUPPLIER}/${tooLong}/`)).statusCode).toBe(400);
  });
});

describe('control characters', () => {
  it('a NUL in a body string is 400 invalid_character at its path, and nothing is written', async () => {
    const res = await api.stage({ ...accountPayload('NUL-1'), billing_name: 'Ana\u0000Pérez' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toContainEqual(
      expect.objectContaining({ code: 'invalid_character', attr: 'billing_name' }),
    );
    expect(
      await t.app.db.models.AccountImportProcess.countDocuments({ externalAccountNumber: 'NUL-1' }),
    ).toBe(0);
  });

  it('a NUL in an external account number, in a metadata value or a newline in a name is refused too', async () => {
    const ext = await api.stage(accountPayload('NUL\u0000-2'));
    expect(ext.json().errors).toContainEqual(
      expect.objectContaining({ code: 'invalid_character', attr: 'external_account_number' }),
    );
    const name = await api.stage({ ...accountPayload('NL-1'), billing_name: 'Ana\nPérez' });
    expect(name.json().errors).toContainEqual(
      expect.objectContaining({ code: 'invalid_character', attr: 'billing_name' }),
    );
    const payload = accountPayload('META-1') as Record<string, unknown>;
    const meta = await api.stage({ ...payload, metadata: [{ key: 'legacy', value: { note: 'a\u0000b' } }] });
    expect(meta.statusCode).toBe(400);
    expect(meta.json().errors[0].attr).toMatch(/^metadata\.0\.value/);
  });

  it('a NUL in a path parameter is 400 invalid_character, never a 500', async () => {
    for (const url of [
      `/v1/data-import/account-transfer-status/${SUPPLIER}/A%00B/`,
      `/v1/data-import/all-account-import-processes/X%00Y/`,
      `/v2/data-import/accounts/${SUPPLIER}/A%00B/`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code).toBe('request_failed_validation');
      expect(res.json().errors[0].code).toBe('invalid_character');
    }
  });
});

describe('Unicode forms', () => {
  it('an external number staged decomposed (NFD) and composed (NFC) is one import process, found by either', async () => {
    const nfc = 'CAF\u00C9-1';
    const nfd = 'CAFE\u0301-1';
    expect((await api.stage(accountPayload(nfd))).statusCode).toBe(201);
    // The same process again: an update (200), not a second process (201).
    expect((await api.stage(accountPayload(nfc))).statusCode).toBe(200);
    expect(
      await t.app.db.models.AccountImportProcess.countDocuments({
        externalAccountNumber: { $in: [nfc, nfd] },
      }),
    ).toBe(1);
    expect((await api.status(encodeURIComponent(nfd))).statusCode).toBe(200);
    expect((await api.status(encodeURIComponent(nfc))).json().external_account_number ?? nfc).toBe(nfc);
  });
});
