import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { startTestApp, createTenant, type TestApp } from '../support/app.js';
import {
  apiFor,
  setupTenant,
  startTestWorkers,
  until,
  type Api,
  type TestWorkers,
} from '../creation/support.js';
import { inMs, v2For, type V2 } from '../v2/support.js';
import { spoilScheduled, withTeam } from '../cutover/support.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { kindsOf, timelineFor, type TimelineApi, type TimelineBody } from './support.js';

// The timeline of accounts that ran: every step in order with the done reason, a failure's code and path,
// paging, tenancy and bad queries. Workers run; a webhook endpoint receives every event.
let t: TestApp;
let v1: Api;
let v2: V2;
let timeline: TimelineApi;
let workers: TestWorkers;
let receiver: Receiver;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'timeline', WEBHOOK_ALLOW_PRIVATE: 'true' } });
  const { headers } = await setupTenant(t);
  v1 = apiFor(t, headers);
  v2 = v2For(t, headers);
  timeline = timelineFor(t, headers);
  workers = await startTestWorkers(t.config);
  receiver = await startReceiver();
  await new WebhookOperations(t.app.storage, t.config).add('Acme Energía', receiver.url, []);
});
afterAll(async () => {
  await workers?.stop();
  await receiver?.close();
  await t?.close();
});

const status = async (external: string) => (await v2.status(external)).json<{ status: string }>().status;

describe('the timeline of an account that ran', () => {
  it(
    'a v2-scheduled account with post-imports: every step in order, and why it is done',
    { timeout: 60_000 },
    async () => {
      const external = 'TL-DONE';
      expect((await v1.stage(withTeam(external))).statusCode).toBe(201);
      // Staged again with other data (a re-stage), then once more with the same (no step).
      const changed = { ...withTeam(external), billing_name: 'Lucía Fernández' };
      expect((await v1.stage(changed)).statusCode).toBe(200);
      expect((await v1.stage(changed)).statusCode).toBe(200);
      expect((await v2.schedule(changed)).statusCode).toBe(201);
      await until(async () => (await status(external)) === 'PROCESSED', 'the account created');
      const notes = { notes: [{ body: 'Migrated.' }, { body: 'Prefers e-mail.' }] };
      expect((await v1.postImport(external, 'notes/create/', notes)).statusCode).toBe(201);
      const transactions = {
        transactions: [1, 2, 3].map((i) => ({
          transaction_id: `TL-T${i}`,
          transaction_date: '2025-04-20',
          amount: '10.00',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        })),
      };
      expect((await v1.postImport(external, 'transactions/create/', transactions)).statusCode).toBe(201);
      // Sent again: already there, no step.
      expect((await v1.postImport(external, 'transactions/create/', transactions)).statusCode).toBe(201);
      // Every event delivered: the process's PROCESSED and the two writes'.
      await until(async () => receiver.ids().size >= 3, 'three webhooks delivered');
      const settled = async () => {
        const body = (await timeline.get(external)).json<TimelineBody>();
        const hooks = body.steps.filter((s) => s.step === 'webhook');
        return hooks.length === 3 && hooks.every((s) => s.data.status === 'delivered') && body;
      };
      const body = await until(settled, 'three deliveries delivered in the timeline');

      expect(body.status).toBe('PROCESSED');
      expect(kindsOf(body.steps)).toEqual([
        'staged',
        'restaged',
        'scheduled',
        'queued',
        'started',
        'created',
        'post_import',
        'post_import',
      ]);
      const at = body.steps.map((s) => Date.parse(s.at));
      expect([...at].sort((a, b) => a - b)).toEqual(at);
      const step = (kind: string) => body.steps.find((s) => s.step === kind)!;
      expect(step('scheduled').data).toMatchObject({ task: 1, is_dry_run: false });
      expect(step('started').data.worker).toMatch(/^.+:\d+$/);
      expect(step('started').duration_ms).toBeGreaterThanOrEqual(0);
      expect(step('queued').duration_ms).toBeGreaterThanOrEqual(0);
      const created = step('created').data.kraken_account_number as string;
      expect(created).toMatch(/^A-[0-9A-F]{8}$/);
      expect(body.steps.filter((s) => s.step === 'post_import').map((s) => s.data)).toEqual([
        { resource: 'notes', count: 2 },
        { resource: 'transactions', count: 3 },
      ]);
      const hooks = body.steps.filter((s) => s.step === 'webhook');
      expect(hooks.map((s) => s.data.event_type).sort()).toEqual([
        'data_import.import_process.complete-v1',
        'data_import.import_process.post_import.completed-v1',
        'data_import.import_process.post_import.completed-v1',
      ]);
      for (const hook of hooks) expect(hook.data).toMatchObject({ attempts: 1, last_http_status: 200 });
      expect(body.why).toMatchObject({
        code: 'done',
        data: { kraken_account_number: created, post_import_writes: 2 },
      });
      expect(body.why.detail).toContain(created);
      expect(body.truncated).toBe(false);
      // No personal data: the re-stage names its payload by a hash only.
      expect(JSON.stringify(body)).not.toContain('Lucía');
    },
  );

  it('a failed one shows its code and path', { timeout: 60_000 }, async () => {
    const external = 'TL-FAILED';
    expect((await v2.schedule(withTeam(external), { schedule_window_start: inMs(2_000) })).statusCode).toBe(
      201,
    );
    await spoilScheduled(t, external);
    await until(async () => (await status(external)) === 'ERRORED', 'the creation failed');
    const body = (await timeline.get(external)).json<TimelineBody>();
    expect(kindsOf(body.steps)).toEqual(['staged', 'scheduled', 'queued', 'started', 'failed']);
    const failed = body.steps.find((s) => s.step === 'failed')!;
    expect(failed.data).toMatchObject({ code: 'account_failed_validation', paths: ['billing_postcode'] });
    expect(body.why).toMatchObject({
      code: 'failed',
      data: { code: 'account_failed_validation', paths: ['billing_postcode'] },
    });
    expect(body.why.detail).toContain('billing_postcode');
  });

  it('pages with `limit` and `cursor`: every step once, in order', async () => {
    const whole = (await timeline.get('TL-DONE')).json<TimelineBody>();
    const paged = await timeline.all('TL-DONE', 2);
    expect(paged.pages.length).toBe(Math.ceil(whole.steps.length / 2));
    expect(paged.pages.every((p) => p.steps.length <= 2)).toBe(true);
    expect(paged.steps.map((s) => s.id)).toEqual(whole.steps.map((s) => s.id));
    expect(paged.pages[paged.pages.length - 1]!.next).toBeNull();
  });

  it('bad queries: 400 with the documented body', async () => {
    const cursor = await timeline.get('TL-DONE', '?cursor=not-a-cursor');
    expect(cursor.statusCode).toBe(400);
    expect(cursor.json()).toEqual({
      detail: expect.any(String),
      code: 'request_failed_validation',
      errors: [{ code: 'invalid', attr: 'cursor', detail: 'Not a cursor this endpoint answered.' }],
    });
    for (const limit of ['0', '101', 'ten']) {
      const res = await timeline.get('TL-DONE', `?limit=${limit}`);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'request_failed_validation', errors: [{ attr: 'limit' }] });
    }
  });

  it('another organisation’s account, or one never staged: 404 as the events route answers', async () => {
    const other = await createTenant(t, 'Other Energy', 'OTHER_SUPPLIER');
    const theirs = timelineFor(t, other.headers);
    for (const res of [await theirs.get('TL-DONE'), await timeline.get('TL-NEVER')]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ detail: 'Not found.', code: 'not_found' });
    }
    expect((await v2.events('TL-NEVER')).json()).toEqual({ detail: 'Not found.', code: 'not_found' });
  });
});
