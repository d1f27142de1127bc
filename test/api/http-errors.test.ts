import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
let headers: Record<string, string>;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'httperr', BODY_LIMIT_BYTES: '2048' } });
  headers = (await createTenant(t, 'Errors Org', 'ERR')).headers;
});
afterAll(async () => t.close());

const url = '/v1/data-import/validate-account/';

describe('request errors', () => {
  it('answers malformed JSON with 400 parse_error', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"import_supplier": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchInlineSnapshot(`
      {
        "code": "parse_error",
        "detail": "Malformed JSON in the request body.",
        "errors": [],
      }
    `);
  });

  it('answers an empty JSON body and prototype poisoning with 400 parse_error', async () => {
    const empty = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '',
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().code).toBe('parse_error');
    const poisoned = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"__proto__": {"admin": true}}',
    });
    expect(poisoned.statusCode).toBe(400);
    expect(poisoned.json().code).toBe('parse_error');
  });

  it('refuses the same bodies on the stage route, whose parser keeps the text it received', async () => {
    const stage = (payload: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/data-import/account-import-process/create-or-update/',
        headers: { ...headers, 'content-type': 'application/json' },
        payload,
      });
    for (const body of [
      '{"import_supplier": ',
      '',
      '{"__proto__": {"admin": true}}',
      '{"a": {"constructor": {"prototype": {"admin": true}}}}',
    ]) {
      const res = await stage(body);
      expect({ body, status: res.statusCode, code: res.json().code }).toEqual({
        body,
        status: 400,
        code: 'parse_error',
      });
    }
    const tooLarge = await stage(JSON.stringify({ import_supplier: 'ERR', filler: 'x'.repeat(4096) }));
    expect(tooLarge.statusCode).toBe(413);
    expect(tooLarge.json().code).toBe('payload_too_large');
  });

  it('answers a wrong content type with 415', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'text/csv' },
      payload: 'a,b',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toEqual({
      detail: 'Send the body as application/json.',
      code: 'unsupported_media_type',
    });
  });

  it('answers any non-JSON media type with 415 on every JSON route, before reading the body', async () => {
    const openapi = (await t.app.inject({ url: '/docs/json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    // The token mutation (GraphQL) answers its 415 as a GraphQL error; it is checked below.
    const posts = Object.entries(openapi.paths)
      .filter(([path, ops]) => 'post' in ops && path.startsWith('/v1/data-import/'))
      .map(([path]) => path);
    expect(posts).toContain('/v1/data-import/notes/create/');
    for (const path of posts) {
      for (const type of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded']) {
        const res = await t.app.inject({
          method: 'POST',
          url: path,
          headers: { ...headers, 'content-type': type },
          payload: JSON.stringify({ import_supplier: 'ERR' }),
        });
        expect({ path, type, status: res.statusCode, body: res.json() }).toEqual({
          path,
          type,
          status: 415,
          body: { detail: 'Send the body as application/json.', code: 'unsupported_media_type' },
        });
      }
    }
    const graphql = await t.app.inject({
      method: 'POST',
      url: '/v1/graphql/',
      headers: { 'content-type': 'text/plain' },
      payload: JSON.stringify({ query: '{ ping }' }),
    });
    expect({ status: graphql.statusCode, body: graphql.json() }).toEqual({
      status: 415,
      body: { data: null, errors: [{ message: 'Unsupported Media Type' }] },
    });
  });

  it('answers a wrong method on an existing path with 405 and an Allow header', async () => {
    const cases: Array<[string, string, string]> = [
      ['GET', '/v1/data-import/validate-account/', 'POST'],
      ['DELETE', '/v1/data-import/notes/create', 'POST'],
      ['POST', '/v1/data-import/account-transfer-status/ERR/EXT-1/', 'GET, HEAD'],
      ['PUT', '/v1/data-import/all-account-import-processes/ERR/?limit=2', 'GET, HEAD'],
      ['PATCH', '/v1/graphql/', 'GET, HEAD, POST'],
      ['POST', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await t.app.inject({ method: method as 'GET', url, headers });
      expect({ url, status: res.statusCode, allow: res.headers.allow, body: res.json() }).toEqual({
        url,
        status: 405,
        allow,
        body: { detail: 'Method not allowed.', code: 'method_not_allowed' },
      });
    }
    // A path that exists under no method stays 404, without an Allow header.
    const missing = await t.app.inject({ method: 'DELETE', url: '/v1/data-import/nothing/', headers });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers.allow).toBeUndefined();
  });

  it('answers GraphQL over GET, and a GET without a query as a GraphQL error, never an internal message', async () => {
    const ping = await t.app.inject({ method: 'GET', url: '/v1/graphql/?query=%7Bping%7D' });
    expect(ping.json()).toEqual({ data: { ping: 'pong' } });
    const res = await t.app.inject({ method: 'GET', url: '/v1/graphql/' });
    expect(res.body).not.toMatch(/Cannot read|undefined|stack/i);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ data: null, errors: [{ message: 'Unknown query' }] });
    // The token endpoint keeps GraphQL's own error shape for a body that is not JSON.
    const plain = await t.app.inject({
      method: 'POST',
      url: '/v1/graphql/',
      headers: { 'content-type': 'text/plain' },
      payload: '{"query": "{ ping }"}',
    });
    expect(plain.statusCode).toBe(415);
  });

  it('answers a body over the limit with 413', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify({ import_supplier: 'ERR', pad: 'x'.repeat(4096) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ detail: 'The request body is too large.', code: 'payload_too_large' });
  });

  it('answers an unknown route with 404 in the documented shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/data-import/nothing-here/', headers });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'Not found.', code: 'not_found' });
  });
});

describe('request ids', () => {
  it('echoes a sane X-Request-Id and generates one otherwise', async () => {
    const given = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'script-run-42.7' } });
    expect(given.headers['x-request-id']).toBe('script-run-42.7');
    const generated = await t.app.inject({
      url: '/healthz',
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('operations endpoints', () => {
  it('serves health, readiness, metrics and the OpenAPI document', async () => {
    expect((await t.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await t.app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok', queues: 'ok' } });
    const metrics = await t.app.inject({ url: '/metrics' });
    expect(metrics.headers['content-type']).toContain('text/plain');
    expect(metrics.body).toContain('http_request_duration_seconds_bucket');
    const openapi = (await t.app.inject({ url: '/docs/json' })).json();
    expect(openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.paths)).toContain('/v1/data-import/validate-account/');
    expect(Object.keys(openapi.paths)).toContain(
      '/v1/data-import/account-transfer-status/{code}/{external}/',
    );
  });
});
