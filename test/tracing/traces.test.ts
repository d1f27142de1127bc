import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, waitForPort } from '../support/processes.js';
import { childEnv } from '../creation/processes.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM, until } from '../creation/support.js';
import { readResults, runClient } from '../client/support.js';
import { inMs } from '../v2/support.js';
import {
  KIND,
  otelModules,
  serviceProcess,
  startReceiver,
  traceparent,
  type Receiver,
  type ServiceProcess,
  summary,
  type Span,
} from './support.js';

// The web and a worker as their own processes, exporting to a real OTLP/HTTP receiver: one account's create is
// one trace from the caller's span through the web's server span and the job to the worker's database and Redis
// calls. On the scaled leg the same across a Redis Cluster and FerretDB on PostgreSQL.
let t: TestApp;
let tenant: { apiKey: string; token: string; headers: Record<string, string> };
let receiver: Receiver;
let dir: string;
let baseUrl: string;
let web: ServiceProcess;
let worker: ServiceProcess;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'tracing' } });
  tenant = await setupTenant(t);
  receiver = await startReceiver();
  dir = mkdtempSync(join(tmpdir(), 'tracing-'));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env = childEnv(t.config, {
    LOG_LEVEL: 'info',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  web = serviceProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' }, join(dir, 'web.modules'));
  worker = serviceProcess('worker', env, join(dir, 'worker.modules'));
  await waitForPort(port);
  await until(
    async () => worker.lines.some((l) => l.msg === 'workers started'),
    'the worker to start',
    180_000,
  );
}, 240_000);

afterAll(async () => {
  await web?.stop();
  await worker?.stop();
  await receiver?.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...tenant.headers, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
}

const stage = (external: string) =>
  call('POST', '/v1/data-import/account-import-process/create-or-update/', accountPayload(external));

/** The spans of a trace that show it crossed web, queue and worker; waits until the worker's have arrived. */
async function crossing(traceId: string, jobName: string) {
  return until(
    async () => {
      const spans = receiver.trace(traceId);
      const server = spans.find((s) => s.service === 'import-web' && s.kind === KIND.SERVER);
      const produce = spans.find(
        (s) =>
          s.service === 'import-web' &&
          s.kind === KIND.PRODUCER &&
          s.name === `add account-creation.${jobName}`,
      );
      const consume = spans.find(
        (s) =>
          s.service === 'import-worker' && s.kind === KIND.CONSUMER && s.parentSpanId === produce?.spanId,
      );
      if (!server || !produce || !consume) return null;
      const below = descendants(spans, consume);
      const mongo = below.find((s) => dbSystem(s) === 'mongodb');
      const redis = below.find((s) => dbSystem(s) === 'redis');
      return mongo && redis ? { spans, server, produce, consume, mongo, redis } : null;
    },
    `the trace ${traceId} across web, queue and worker`,
    60_000,
  ).catch((err: Error) => {
    throw new Error(
      `${err.message}; received:\n${summary(receiver.trace(traceId))}\n(${receiver.spans.length} spans)`,
    );
  });
}

/** The database a client span calls (under the semantic conventions' old or new name). */
const dbSystem = (s: Span) => s.attributes['db.system.name'] ?? s.attributes['db.system'];

/** Every span under `top` (its children, theirs, ...). */
function descendants(spans: Span[], top: Span): Span[] {
  const found: Span[] = [];
  let level = [top.spanId];
  while (level.length > 0) {
    const next = spans.filter((s) => s.parentSpanId !== undefined && level.includes(s.parentSpanId));
    found.push(...next);
    level = next.map((s) => s.spanId);
  }
  return found;
}

/** Every span's attributes hold nothing secret: no credential, no header, no payload value. */
function expectNothingSecret(spans: Span[]) {
  const text = JSON.stringify(spans);
  expect(text).not.toContain(tenant.token);
  expect(text).not.toContain(tenant.apiKey);
  expect(text).not.toMatch(/authorization/i);
  const payload = accountPayload('X') as { customers?: { email?: string }[] };
  for (const c of payload.customers ?? []) if (c.email) expect(text).not.toContain(c.email);
}

describe('traces across web, queue and worker', () => {
  it('a v1 create is one trace: the caller, the web, the job, the worker and its database and Redis calls', async () => {
    const external = 'TRACE-V1';
    expect((await stage(external)).status).toBe(201);
    const caller = traceparent();
    const requestId = `trace-v1-${Date.now()}`;
    const created = await call(
      'POST',
      '/v1/data-import/account-import-process/process/',
      { external_account_number: external, import_supplier_code: SUPPLIER, operations_team_name: TEAM },
      { traceparent: caller.header, 'x-request-id': requestId },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    const { spans, server, consume, mongo, redis } = await crossing(caller.traceId, 'create-account');
    // The web continues the caller's trace; the worker's spans hang under the job's consume span.
    expect(server.parentSpanId).toBe(caller.spanId);
    expect(server.attributes['http.request.method'] ?? server.attributes['http.method']).toBe('POST');
    expect(consume.name).toBe('process account-creation');
    expect(mongo.service).toBe('import-worker');
    expect(redis.service).toBe('import-worker');
    // No statement's values: a command's name only.
    const statement = mongo.attributes['db.query.text'] ?? mongo.attributes['db.statement'] ?? '';
    expect(String(statement)).toMatch(/^[a-zA-Z]*$/);
    expectNothingSecret(spans);

    // The web's log lines of that request carry its trace id.
    const logged = web.lines.filter((l) => l.request_id === requestId);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((l) => l.trace_id === caller.traceId && typeof l.span_id === 'string')).toBe(true);
  });

  it('a v2 scheduled creation is one trace from the schedule request to the worker that creates it', async () => {
    const external = 'TRACE-V2';
    const caller = traceparent();
    const scheduled = await call(
      'POST',
      '/v2/data-import/accounts/',
      {
        payload: { ...accountPayload(external), operations_team_name: TEAM },
        task_params: { schedule_window_start: inMs(0), schedule_window_end: inMs(3_600_000) },
      },
      { traceparent: caller.header },
    );
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);
    const { server, spans } = await crossing(caller.traceId, 'run-import-task');
    expect(server.parentSpanId).toBe(caller.spanId);
    await until(async () => {
      const status = await call('GET', `/v2/data-import/accounts/${SUPPLIER}/${external}/`, undefined);
      return status.body?.status === 'PROCESSED';
    }, 'the scheduled account to be created');
    expectNothingSecret(spans);
  });

  it('import-client exports its request spans (OTLP protobuf), continued by the web and the worker', async () => {
    const file = join(dir, 'cohort.jsonl');
    writeFileSync(file, JSON.stringify(accountPayload('TRACE-CLIENT')) + '\n');
    const report = join(dir, 'report');
    const run = await runClient(['migrate', file, '--team', TEAM, '--report', report, '--quiet'], {
      IMPORT_BASE_URL: baseUrl,
      IMPORT_API_KEY: tenant.apiKey,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(readResults(report).map((r) => r.outcome)).toEqual(['created']);

    // The web's span of the create names its caller's span: the client's, exported in protobuf.
    const bytes = (hex: string) => Buffer.from(hex, 'hex');
    const fromClient = (s: Span) =>
      receiver.raw.some(
        (r) =>
          r.contentType === 'application/x-protobuf' &&
          r.body.includes('import-client') &&
          r.body.includes(bytes(s.traceId)) &&
          r.body.includes(bytes(s.parentSpanId ?? '')),
      );
    const server = await until(
      async () =>
        receiver.spans.find(
          (s) =>
            s.kind === KIND.SERVER &&
            String(s.attributes['url.path'] ?? s.attributes['http.target']).endsWith(
              '/account-import-process/process/',
            ) &&
            s.parentSpanId !== undefined &&
            fromClient(s),
        ),
      'the web span of the client’s create',
      30_000,
    );
    await crossing(server.traceId, 'create-account');
  });
});

describe('tracing off', () => {
  it('loads no OpenTelemetry module and sends nothing; logs carry no trace id', async () => {
    // The traced processes first: what they loaded is the check's positive control.
    await web.stop();
    await worker.stop();
    expect(otelModules(web.modules()).length).toBeGreaterThan(0);
    expect(otelModules(worker.modules()).length).toBeGreaterThan(0);

    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    const env = childEnv(t.config, { LOG_LEVEL: 'info' });
    // The web with no OTEL_* at all; the worker pointed at the receiver but switched off (OTEL_SDK_DISABLED wins).
    const offWeb = serviceProcess(
      'web',
      { ...env, PORT: String(port), HOST: '127.0.0.1' },
      join(dir, 'off-web'),
    );
    const offWorker = serviceProcess(
      'worker',
      { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SDK_DISABLED: 'true' },
      join(dir, 'off-worker'),
    );
    try {
      await waitForPort(port);
      const before = receiver.requests();
      expect((await stage('TRACE-OFF')).status).toBe(201);
      const requestId = `trace-off-${Date.now()}`;
      const created = await call(
        'POST',
        '/v1/data-import/account-import-process/process/',
        { external_account_number: 'TRACE-OFF', import_supplier_code: SUPPLIER, operations_team_name: TEAM },
        { traceparent: traceparent().header, 'x-request-id': requestId },
      );
      expect(created.status).toBe(201);
      const logged = offWeb.lines.filter((l) => l.request_id === requestId);
      expect(logged.length).toBeGreaterThan(0);
      expect(logged.some((l) => 'trace_id' in l)).toBe(false);
      await offWeb.stop();
      await offWorker.stop();
      expect(receiver.requests()).toBe(before);
      expect(otelModules(offWeb.modules())).toEqual([]);
      expect(otelModules(offWorker.modules())).toEqual([]);
    } finally {
      await offWeb.stop();
      await offWorker.stop();
    }
  });
});
