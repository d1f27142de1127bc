import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateAccount } from '../../src/domain/validation/index.js';
import { liveValidationThreads } from '../../src/infra/validation-pool/pool.js';
import { largeAccountPayload, testContext, validAccountPayload } from '../domain/fixtures.js';
import { setAt } from '../domain/json-path.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';

// Validate-account on the worker-thread pool must answer exactly as it does on the event loop: the same
// status, headers and bytes for every body, valid or not.

const SUPPLIER = validAccountPayload().import_supplier;
const url = '/v1/data-import/validate-account/';
// Room for the ~56 KB benchmark account, small enough to test the limit cheaply.
const env = { BODY_LIMIT_BYTES: '100000' };

type Side = { t: TestApp; headers: Record<string, string> };
let inline: Side;
let pooled: Side;

async function side(label: string, threads: string): Promise<Side> {
  const t = await startTestApp({ env: { TEST_LABEL: label, VALIDATION_THREADS: threads, ...env } });
  const { headers } = await createTenant(t, 'Pool Org', SUPPLIER);
  await t.ops.createOrganisation('Other Org');
  await t.ops.createSupplier('ELSEWHERE', 'Other Org');
  // Operators can no longer create one (see test/cli), but one stored earlier may exist.
  await t.ops.createSupplier('FAR_AWAY', 'Pool Org');
  await t.app.db.models.ImportSupplier.updateOne({ code: 'FAR_AWAY' }, { $set: { region: 'XX' } });
  return { t, headers };
}

beforeAll(async () => {
  [inline, pooled] = await Promise.all([side('vinline', '0'), side('vpooled', '2')]);
});
afterAll(async () => {
  await Promise.all([inline?.t.close(), pooled?.t.close()]);
});

const SAME_HEADERS = ['content-type', 'content-length', 'connection', 'x-request-id'];

/** Sends the same request to both apps (each with its own token) and checks the answers are identical. */
async function both(payload: string | undefined, headers: Record<string, string | undefined> = {}) {
  const request = (s: Side): InjectOptions => {
    const all = {
      'content-type': 'application/json',
      'x-request-id': 'same-request',
      ...s.headers,
      ...headers,
    };
    const sent = Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined);
    return {
      method: 'POST',
      url,
      headers: Object.fromEntries(sent),
      ...(payload === undefined ? {} : { payload }),
    };
  };
  const [a, b] = await Promise.all([
    inline.t.app.inject(request(inline)),
    pooled.t.app.inject(request(pooled)),
  ]);
  const pick = (r: LightMyRequestResponse) => Object.fromEntries(SAME_HEADERS.map((h) => [h, r.headers[h]]));
  expect({ status: b.statusCode, headers: pick(b) }).toEqual({ status: a.statusCode, headers: pick(a) });
  expect(b.rawPayload.equals(a.rawPayload), `${a.body.slice(0, 300)}\n---\n${b.body.slice(0, 300)}`).toBe(
    true,
  );
  return a;
}

const withSupplier = (payload: object, code: unknown) => {
  setAt(payload, 'import_supplier', code);
  return payload;
};

describe('validate-account on the pool and on the event loop', () => {
  it('answers a valid account with the same bytes: the normalised data', async () => {
    for (const payload of [validAccountPayload(), largeAccountPayload()]) {
      const res = await both(JSON.stringify(payload));
      expect(res.statusCode).toBe(200);
      const expected = validateAccount(JSON.parse(JSON.stringify(payload)), testContext());
      expect(expected.ok && res.body === JSON.stringify(expected.data)).toBe(true);
    }
    // Whitespace, a byte order mark and another charset parameter change nothing.
    await both(`\ufeff${JSON.stringify(validAccountPayload(), null, 2)}`);
    expect(
      (
        await both(JSON.stringify(validAccountPayload()), {
          'content-type': 'application/json; charset=UTF-8',
        })
      ).statusCode,
    ).toBe(200);
  });

  it('answers an invalid account with the same 400, unknown supplier included in order', async () => {
    const broken = () => {
      const payload = largeAccountPayload();
      setAt(payload, 'customers.0.landline', '12345');
      setAt(payload, 'ledgers.0.current_statement_transactions.1.amount', 'five');
      setAt(payload, 'ledgers.0.historical_statement_transactions.0.line_items.0.net_amount', '1.00');
      setAt(payload, 'account_type', 'MARTIAN');
      return payload;
    };
    const bodies = [
      broken(),
      withSupplier(broken(), 'NOPE'),
      withSupplier(broken(), 'ELSEWHERE'), // another organisation's supplier counts as none
      withSupplier(validAccountPayload(), 'NOPE'),
      withSupplier(validAccountPayload(), ` ${SUPPLIER} `),
      withSupplier(validAccountPayload(), 'x'.repeat(80)),
      withSupplier(validAccountPayload(), 42),
      withSupplier(validAccountPayload(), ''),
    ];
    const codes: string[][] = [];
    for (const payload of bodies) {
      const res = await both(JSON.stringify(payload));
      expect(res.statusCode).toBe(400);
      codes.push(res.json().errors.map((e: { code: string }) => e.code));
    }
    expect(codes[1]).toContain('import_supplier_not_found');
    expect(codes[1]!.slice(0, codes[1]!.indexOf('import_supplier_not_found'))).toEqual(
      codes[0]!.slice(0, codes[1]!.indexOf('import_supplier_not_found')),
    );
    expect(codes[3]).toEqual(['import_supplier_not_found']);
    for (const body of ['[]', '"text"', '12', 'null', 'true', '{}', '{"import_supplier": "NOPE"}'])
      expect((await both(body)).json().code).toBe('account_failed_validation');
  });

  it('answers malformed, empty and poisoned JSON with the same 400 parse_error', async () => {
    const bodies = [
      '{"import_supplier": ',
      '',
      '\ufeff',
      '{"a": 1,}',
      '{"__proto__": {"admin": true}}',
      '{"customers": [{"\\u005f_proto__": {}}]}',
      '{"constructor": {"prototype": {"admin": true}}}',
      `${JSON.stringify(validAccountPayload())} trailing`,
    ];
    for (const body of bodies) {
      const res = await both(body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        detail: 'Malformed JSON in the request body.',
        code: 'parse_error',
        errors: [],
      });
    }
    // A "constructor" key that is not poisoning is data like any other.
    expect((await both('{"constructor": {"name": "x"}}')).json().code).toBe('account_failed_validation');
  });

  it('answers the same 413, 415, text/plain and body-less request', async () => {
    const tooLarge = await both(JSON.stringify({ ...validAccountPayload(), pad: 'x'.repeat(150_000) }));
    expect(tooLarge.statusCode).toBe(413);
    expect((await both('a,b', { 'content-type': 'text/csv' })).statusCode).toBe(415);
    // Only JSON is accepted, even when a text/plain body holds a valid account.
    const plain = await both(JSON.stringify(validAccountPayload()), { 'content-type': 'text/plain' });
    expect(plain.statusCode).toBe(415);
    expect(plain.json()).toEqual({
      detail: 'Send the body as application/json.',
      code: 'unsupported_media_type',
    });
    const bodyless = await both(undefined, { 'content-type': undefined });
    expect(bodyless.statusCode).toBe(400);
    expect(bodyless.json().code).toBe('account_failed_validation');
  });

  it('answers the same 500 when the supplier needs a region without a profile', async () => {
    const res = await both(JSON.stringify(withSupplier(validAccountPayload(), 'FAR_AWAY')));
    expect(res.statusCode).toBe(500);
    // The next request, of an ES supplier, is not affected.
    expect((await both(JSON.stringify(validAccountPayload()))).statusCode).toBe(200);
  });

  it('gives each of many concurrent requests its own answer', async () => {
    const payloads = Array.from({ length: 24 }, (_, i) => {
      const payload = i % 3 === 0 ? largeAccountPayload() : validAccountPayload();
      payload.external_account_number = `EXT-${i}`;
      if (i % 4 === 1) setAt(payload, 'billing_postcode', '99999');
      return payload;
    });
    const answers = await Promise.all(
      payloads.map((payload) =>
        pooled.t.app.inject({
          method: 'POST',
          url,
          headers: { ...pooled.headers, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        }),
      ),
    );
    answers.forEach((res, i) => {
      if (i % 4 === 1) {
        expect(res.json().errors).toEqual([expect.objectContaining({ attr: 'billing_postcode' })]);
      } else {
        expect(res.json().external_account_number, res.body.slice(0, 500)).toBe(`EXT-${i}`);
      }
    });
  });
});

describe('the validation pool', () => {
  it('starts a thread with the app, more under load up to the limit, and stops them all on close', async () => {
    const before = liveValidationThreads();
    const t = await startTestApp({ env: { TEST_LABEL: 'vclose', VALIDATION_THREADS: '3' } });
    try {
      expect(liveValidationThreads()).toBe(before + 1);
      const { headers } = await createTenant(t, 'Close Org', SUPPLIER);
      const payload = JSON.stringify(largeAccountPayload());
      const answers = await Promise.all(
        Array.from({ length: 40 }, () =>
          t.app.inject({
            method: 'POST',
            url,
            headers: { ...headers, 'content-type': 'application/json' },
            payload,
          }),
        ),
      );
      expect(answers.every((res) => res.statusCode === 200)).toBe(true);
      expect(liveValidationThreads()).toBe(before + 3);
    } finally {
      await t.close();
    }
    expect(liveValidationThreads()).toBe(before);
    const inlineOnly = await startTestApp({ env: { TEST_LABEL: 'vnone', VALIDATION_THREADS: '0' } });
    expect(liveValidationThreads()).toBe(before);
    await inlineOnly.close();
  });
});
