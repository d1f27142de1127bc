import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

const root = resolve(import.meta.dirname, '../..');

/** OTLP's span kinds as the JSON encoding numbers them. */
export const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean };
type KeyValue = { key: string; value: AnyValue };
type OtlpSpan = {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: KeyValue[];
};
type ExportRequest = {
  resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
};

/** A span as the receiver saw it, with the resource's service name and its attributes as a plain object. */
export type Span = Omit<OtlpSpan, 'attributes'> & {
  service: string;
  attributes: Record<string, string | number | boolean | undefined>;
};

const plain = (kvs: KeyValue[] = []) =>
  Object.fromEntries(
    kvs.map(({ key, value }) => [key, value.stringValue ?? value.boolValue ?? Number(value.intValue ?? NaN)]),
  );

/**
 * A real OTLP/HTTP receiver (what a collector does on port 4318): JSON export requests are decoded into spans;
 * protobuf ones are kept as their bytes (`raw`).
 */
export async function startReceiver() {
  const spans: Span[] = [];
  const raw: { contentType: string; body: Buffer }[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const contentType = String(req.headers['content-type'] ?? '');
      if (req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith('application/json')) {
        const request = JSON.parse(body.toString()) as ExportRequest;
        for (const rs of request.resourceSpans ?? []) {
          const service = String(plain(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? []) spans.push({ ...s, service, attributes: plain(s.attributes) });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        raw.push({ contentType, body });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    raw,
    requests: () => requests,
    trace: (traceId: string) => spans.filter((s) => s.traceId === traceId),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A service process (`web` or `worker`, its own entry point through tsx) whose JSON log lines are kept, with
 * test/tracing/module-log.mjs preloaded: `modules()` after it exited lists every module it loaded.
 */
export function serviceProcess(kind: 'web' | 'worker', env: NodeJS.ProcessEnv, moduleLog: string) {
  const entry = kind === 'web' ? 'src/api/server.ts' : 'src/workers/index.ts';
  const proc = spawn(
    process.execPath,
    ['--import', './test/tracing/module-log.mjs', '--import', 'tsx', entry],
    { cwd: root, env: { ...env, MODULE_LOG: moduleLog }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines: Record<string, unknown>[] = [];
  let rest = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts.filter(Boolean)) {
      try {
        lines.push(JSON.parse(part) as Record<string, unknown>);
      } catch {
        // silent-ok: a line that is not JSON (none expected) is not a log line to look at
      }
    }
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    lines,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
    },
    modules: () => readFileSync(moduleLog, 'utf8').split('\n'),
  };
}

export type ServiceProcess = ReturnType<typeof serviceProcess>;

/** A W3C `traceparent` for a trace the test starts, as a client's span would send it. */
export function traceparent(): { header: string; traceId: string; spanId: string } {
  const hex = (bytes: number) =>
    Array.from({ length: bytes }, () =>
      Math.floor(Math.random() * 256)
        .toString(16)
        .padStart(2, '0'),
    ).join('');
  const traceId = hex(16);
  const spanId = hex(8);
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

/**
 * The OpenTelemetry modules among a process's loaded modules: the SDK, exporters, instrumentations, bullmq-otel.
 * Not the API package (@opentelemetry/api), a no-op facade without an SDK, which prom-client itself loads.
 */
export const otelModules = (modules: string[]) =>
  modules.filter((m) => /\/node_modules\/(@opentelemetry\/(?!api\/)|bullmq-otel\/)/.test(m));

/** A trace's spans in short, for a failure's message. */
export const summary = (spans: Span[]) =>
  spans.map((s) => `${s.service} ${s.kind} ${s.name} ${s.spanId}<-${s.parentSpanId ?? ''}`).join('\n');
