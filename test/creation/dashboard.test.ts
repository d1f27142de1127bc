import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { accountPayload, apiFor, setupTenant, startTestWorkers, until, type TestWorkers } from './support.js';

let t: TestApp;
let workers: TestWorkers;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'dashboard' } });
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

it('serves the queue dashboard only with the operator credentials', async () => {
  expect((await t.app.inject({ method: 'GET', url: '/admin/queues' })).statusCode).toBe(401);
  const wrong = await t.app.inject({
    method: 'GET',
    url: '/admin/queues',
    headers: { authorization: basic('operator', 'nope') },
  });
  expect(wrong.statusCode).toBe(401);
  const ok = await t.app.inject({
    method: 'GET',
    url: '/admin/queues/api/queues',
    headers: { authorization: basic(t.config.OPERATOR_USERNAME, t.config.OPERATOR_PASSWORD!) },
  });
  expect(ok.statusCode).toBe(200);
  expect((ok.json() as { queues: Array<{ name: string }> }).queues.map((q) => q.name).sort()).toEqual([
    'account-creation',
    'migration-email',
    'payment-verification',
    'webhooks',
  ]);
});

it('exposes queue job counts and job durations on /metrics', async () => {
  const api = apiFor(t, (await setupTenant(t)).headers);
  await api.stage(accountPayload('MET-1'));
  expect((await api.create('MET-1')).statusCode).toBe(201);
  const text = await until(async () => {
    const body = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    return /queue_job_duration_seconds_count\{queue="account-creation",outcome="completed"\} [1-9]/.test(body)
      ? body
      : null;
  }, 'the job duration to be recorded');
  expect(text).toMatch(/queue_jobs\{queue="account-creation",state="completed"\} 1/);
  // In seconds, from the job's activation to its completion (a creation takes milliseconds, never none).
  const sum = Number(
    /queue_job_duration_seconds_sum\{queue="account-creation",outcome="completed"\} (\S+)/.exec(text)?.[1],
  );
  expect(sum).toBeGreaterThan(0);
  expect(sum).toBeLessThan(30);
  expect(text).toMatch(/queue_jobs\{queue="account-creation",state="waiting"\} 0/);
});

it('serves a dashboard page that calls no other host (it works offline)', async () => {
  const page = await t.app.inject({
    method: 'GET',
    url: '/admin/queues',
    headers: { authorization: basic(t.config.OPERATOR_USERNAME, t.config.OPERATOR_PASSWORD!) },
  });
  expect(page.statusCode).toBe(200);
  expect(page.headers['content-type']).toContain('text/html');
  expect(page.body).toContain('<div id="root">');
  // No absolute URL in any src or href: every asset is the service's own.
  expect(page.body.match(/(?:src|href)="(?:https?:)?\/\/[^"]*"/g) ?? []).toEqual([]);
  expect(page.body).not.toContain('googleapis');
});
