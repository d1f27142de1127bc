import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort } from '../support/processes.js';
import { clientTenant, runClient, startService } from './support.js';

// What a load balancer answers when the web it sent a POST to died after acting on it: 502 (HAProxy never sends
// such a POST again, see deploy/haproxy.cfg). A proxy in front of the real service forwards every request and
// answers the first create (and the first stage) of each account 502 instead of the service's answer, a 504 for
// another: the client sends them again, and every account is created once, reported created or already imported.
const SUPPLIER = 'GATEWAY_SUP';
const TEAM = 'Gateway Team';
const ACCOUNTS = 6;
let t: TestApp;
let service: Awaited<ReturnType<typeof startService>>;
let proxy: Server;
let proxyUrl: string;
let apiKey: string;
let dir: string;
const swallowed: string[] = [];

function forward(
  req: IncomingMessage,
  body: Buffer,
  target: URL,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const out = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    out.on('error', reject);
    out.end(body);
  });
}

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'client-gateway' } });
  apiKey = (await clientTenant(t, 'Gateway Org', SUPPLIER, TEAM)).apiKey;
  service = await startService(t);
  const target = new URL(service.baseUrl);
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      void forward(req, body, target).then(
        (answer) => {
          const kind = req.url?.includes('/process/')
            ? 'create'
            : req.url?.includes('/create-or-update/')
              ? 'stage'
              : null;
          const account = kind ? /"external_account_number":"([^"]+)"/.exec(body.toString())?.[1] : undefined;
          const key = `${kind} ${account}`;
          if (kind && account && !swallowed.includes(key)) {
            swallowed.push(key);
            // The service acted on the request; the client never sees its answer.
            const status = swallowed.length % 5 === 0 ? 504 : 502;
            res
              .writeHead(status, { 'content-type': 'text/html' })
              .end(`<html><body><h1>${status}</h1></body></html>`);
            return;
          }
          res.writeHead(answer.status, answer.headers).end(answer.body);
        },
        () => res.writeHead(502).end(),
      );
    });
  });
  const port = await freePort();
  await new Promise<void>((r) => proxy.listen(port, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${port}`;
  dir = mkdtempSync(join(tmpdir(), 'import-client-gateway-'));
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((r) => (proxy ? proxy.close(r) : r(undefined)));
  await service?.stop();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('sends a request again after a 502 or 504 from a load balancer: every account created once', async () => {
  const file = join(dir, 'cohort.jsonl');
  const externals = Array.from({ length: ACCOUNTS }, (_, i) => `GW-${i}`);
  writeFileSync(
    file,
    externals
      .map((external) =>
        JSON.stringify({
          ...validAccountPayload(),
          import_supplier: SUPPLIER,
          external_account_number: external,
        }),
      )
      .join('\n') + '\n',
  );
  const report = join(dir, 'report');
  const run = await runClient(['migrate', file, '--team', TEAM, '--report', report, '--quiet'], {
    IMPORT_BASE_URL: proxyUrl,
    IMPORT_API_KEY: apiKey,
  });
  expect(run.code, run.stderr).toBe(0);
  // Every stage and every create was answered 502 or 504 once, after the service had acted on it.
  expect(swallowed).toHaveLength(2 * ACCOUNTS);
  const results = readFileSync(join(report, 'results.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { external_account_number: string; outcome: string });
  expect(results.map((r) => r.external_account_number).sort()).toEqual(externals);
  for (const r of results) expect(['created', 'already_imported']).toContain(r.outcome);
  const { models } = t.app.db;
  expect(await models.Account.countDocuments({ importSupplier: SUPPLIER })).toBe(ACCOUNTS);
  expect(await models.Account.distinct('number', { importSupplier: SUPPLIER })).toHaveLength(ACCOUNTS);
});
