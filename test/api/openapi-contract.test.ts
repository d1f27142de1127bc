import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { ContractCheck } from '../support/openapi-contract.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { accountPayload, setupTenant, TEAM } from '../creation/support.js';
import { v2For, type V2 } from '../v2/support.js';

// The contract check every test's answers go through (test/support/app.ts), pinned on answers made up to break
// it, and the two answers that broke the served document before it was fixed.
let contract: ContractCheck;
let t: TestApp;
let v2: V2;

beforeAll(async () => {
  contract = new ContractCheck(
    (await buildOpenApiDocument()) as ConstructorParameters<typeof ContractCheck>[0],
  );
  t = await startTestApp({ env: { TEST_LABEL: 'contract' } });
  v2 = v2For(t, (await setupTenant(t)).headers);
});
afterAll(async () => t?.close());

const answer = (statusCode: number, body: unknown, type = 'application/json; charset=utf-8') =>
  ({
    statusCode,
    headers: body === undefined ? {} : { 'content-type': type },
    body: body === undefined ? '' : JSON.stringify(body),
  }) as unknown as LightMyRequestResponse;

const billing = { method: 'POST' as const, url: '/v1/data-import/historical-billing-documents/create/' };
const schedule = { method: 'POST' as const, url: '/v2/data-import/accounts/' };
const status = { method: 'GET' as const, url: '/v1/data-import/account-transfer-status/ACME/ACC%201/' };

describe('the OpenAPI contract check', () => {
  it('accepts the billing documents 201 with no body and no media type, and refuses one with a body', () => {
    expect(() => contract.check(billing, answer(201, undefined))).not.toThrow();
    expect(() => contract.check(billing, answer(201, {}))).toThrow(
      'OpenAPI contract: POST /v1/data-import/historical-billing-documents/create/ answered 201: a body (application/json) where none is documented',
    );
  });

  it("accepts v2's 400 with `domain` and its already-imported shape; names the operation and path of a mismatch", () => {
    const refused = {
      detail: 'x',
      code: 'import_process_failed_validation',
      errors: [{ detail: 'x', code: 'invalid', attr: 'task_params.schedule_window_start' }],
      domain: 'import_process',
    };
    expect(() => contract.check(schedule, answer(400, refused))).not.toThrow();
    const imported = {
      non_field_errors: { detail: 'x', code: 'account_import_process_already_imported' },
      account_id: 'A-1',
    };
    expect(() => contract.check(schedule, answer(400, imported))).not.toThrow();
    expect(() =>
      contract.check(schedule, answer(400, { ...refused, errors: [{ detail: 'x', code: 1, attr: 'a' }] })),
    ).toThrow(
      /^OpenAPI contract: POST \/v2\/data-import\/accounts\/ answered 400: body at "\/errors\/0\/code"/,
    );
  });

  it('refuses 400-only fields on a 401, an undocumented status and a wrong media type', () => {
    expect(() =>
      contract.check(status, answer(401, { detail: 'x', code: 'not_authenticated', errors: [] })),
    ).toThrow(/answered 401: body at "\/" must NOT have additional properties/);
    expect(() => contract.check(status, answer(418, { detail: 'x', code: 'teapot' }))).toThrow(
      'OpenAPI contract: GET /v1/data-import/account-transfer-status/{code}/{external}/ answered 418: status not documented',
    );
    expect(() => contract.check(status, answer(200, 'ok', 'text/plain'))).toThrow(
      /answered 200: media type "text\/plain", documented: application\/json/,
    );
  });
});

describe('answers that broke the served document, now within it', () => {
  it('v2 schedule with a window in the past: 400 import_process_failed_validation with `domain`', async () => {
    // Checked against the served document by the test app's inject, like every answer of the suite.
    const res = await v2.schedule(
      { ...accountPayload('CONTRACT-PAST'), operations_team_name: TEAM },
      { schedule_window_start: '2020-01-01T00:00:00Z', schedule_window_end: '2020-01-01T01:00:00Z' },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'import_process_failed_validation', domain: 'import_process' });
  });
});
