import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, graphqlToken, startTestApp, type TestApp } from '../support/app.js';

const lines: Array<Record<string, unknown>> = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    cb();
  },
});
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    env: { TEST_LABEL: 'logs', LOG_LEVEL: 'info' },
    logStream: sink,
    extend: (app) => {
      app.get('/boom', { schema: { hide: true } }, async () => {
        throw new Error('secret internal detail: db password hunter2');
      });
    },
  });
});
afterAll(async () => t.close());

describe('logs and 5xx bodies', () => {
  it('answers an unexpected failure with a bare 500 body carrying the request id, logged with the same id', async () => {
    const res = await t.app.inject({ url: '/boom', headers: { 'x-request-id': 'req-500-check' } });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      detail: 'Internal error',
      code: 'internal_error',
      request_id: 'req-500-check',
    });
    expect(res.body).not.toContain('hunter2');
    const logged = lines.filter((l) => l.request_id === 'req-500-check');
    expect(logged.some((l) => l.level === 'error')).toBe(true);
  });

  it('logs JSON lines with the request id and never the API key, token or Authorization header', async () => {
    const tenant = await createTenant(t, 'Log Org', 'LOGS');
    await graphqlToken(t.app, { APIKey: tenant.apiKey });
    await t.app.inject({
      url: '/v1/data-import/all-account-import-processes/LOGS/',
      headers: { ...tenant.headers, 'x-request-id': 'req-log-1' },
    });
    const all = JSON.stringify(lines);
    expect(lines.filter((l) => l.request_id === 'req-log-1').length).toBeGreaterThan(0);
    expect(all).not.toContain(tenant.apiKey);
    expect(all).not.toContain(tenant.token);
  });
});
