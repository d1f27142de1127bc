import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { uniqueName } from '../support/env.js';
import {
  createPostgresDatabase,
  freePort,
  startFerretDb,
  waitForPort,
  type LocalServer,
  type PostgresDatabase,
} from '../support/processes.js';
import { startTcpBalancer } from '../support/tcp-balancer.js';
import { childEnv, startProcess, type Child } from '../creation/processes.js';
import { accountPayload, setupTenant, SUPPLIER, TEAM, until } from '../creation/support.js';
import { runClient } from '../client/support.js';
import { awaitDelivered, startReceiver, type Receiver } from '../webhooks/receiver.js';

// Two "pods", each a web process, a worker process and a FerretDB sidecar, all sidecars on one PostgreSQL
// database; a TCP load balancer in front of the web processes; the migration client pushes 300 accounts
// through it. Mid-run, pod 1's web process is SIGKILLed (for good: the balancer passes it over) and then pod
// 2's FerretDB sidecar (restarted, as an orchestrator would, once pod 2's web reports the database down).
// The client's retries must finish the cohort: every account created once, nothing acknowledged lost.
const ACCOUNTS = 300;
const ORG = 'Pods Org';
const POSTGRES = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let pg: PostgresDatabase;
const sidecars: LocalServer[] = [];
let t: TestApp;
let receiver: Receiver;
let balancer: Awaited<ReturnType<typeof startTcpBalancer>>;
let dir: string;
const webs: Child[] = [];
const workers: Child[] = [];
const webPorts: number[] = [];
let apiKey: string;
let mongoUrlOf: (sidecar: LocalServer) => string;

const settings = {
  WEBHOOK_ALLOW_PRIVATE: 'true',
  OUTBOX_SWEEP_INTERVAL_MS: '2000',
  // Room for a loaded machine at boot; a request meeting a dead sidecar still answers 503 within it.
  MONGO_SERVER_SELECTION_TIMEOUT_MS: '5000',
  // A pod's web and worker together below their sidecar's pool_max_conns (50 by default): each process refuses
  // to start with a pool that is not below it.
  MONGO_MAX_POOL_SIZE: '20',
};

beforeAll(async () => {
  pg = await createPostgresDatabase(POSTGRES, `citest_pods_${uniqueName('p').split('_')[1]}`);
  const database = uniqueName('pods');
  mongoUrlOf = (sidecar) => `mongodb://127.0.0.1:${sidecar.port}/${database}`;
  // The test's own FerretDB (its reads must not depend on the pods'), through which the test app creates the
  // database's collections and indexes; only then the pods' sidecars start. FerretDB caches the collections
  // it finds when first used and never looks again: a sidecar started earlier would try to create, and fail
  // on, every collection another instance created after it (see the README).
  const own = await startFerretDb({ postgresqlUrl: pg.url });
  t = await startTestApp({ env: { TEST_LABEL: 'pods', MONGO_URL: mongoUrlOf(own), ...settings } });
  for (let pod = 0; pod < 2; pod++) sidecars.push(await startFerretDb({ postgresqlUrl: pg.url }));
  sidecars.push(own);
  apiKey = (await setupTenant(t, ORG)).apiKey;
  receiver = await startReceiver();
  await new WebhookOperations(t.app.storage, t.config).add(ORG, receiver.url);
  for (let pod = 0; pod < 2; pod++) {
    const env = { ...childEnv(t.config, settings), MONGO_URL: mongoUrlOf(sidecars[pod]!) };
    const port = await freePort();
    webPorts.push(port);
    webs.push(startProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' }));
    workers.push(startProcess('worker', { ...env, WORKER_CONCURRENCY: '10' }));
  }
  const died = Promise.race([...webs, ...workers].map((c) => c.exited)).then(() => {
    throw new Error('a web or worker process exited while the service started');
  });
  await Promise.race([Promise.all(webPorts.map((p) => waitForPort(p))), died]);
  balancer = await startTcpBalancer(webPorts);
  dir = mkdtempSync(join(tmpdir(), 'pods-'));
});

afterAll(async () => {
  try {
    await Promise.all([...webs, ...workers].map((c) => c.stop()));
    await balancer?.close();
    await receiver?.close();
    await t?.close();
  } finally {
    for (const sidecar of sidecars) await sidecar.stop();
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
});

type Line = { outcome: string; attempts: number };

it(
  `a web process and a FerretDB sidecar killed mid-run: the client's retries create all ${ACCOUNTS} accounts once`,
  { timeout: 1_200_000 },
  async () => {
    const { models } = t.app.db;
    const externals = Array.from({ length: ACCOUNTS }, (_, i) => `POD-${String(i).padStart(4, '0')}`);
    const file = join(dir, 'accounts.jsonl');
    writeFileSync(file, externals.map((e) => JSON.stringify(accountPayload(e))).join('\n') + '\n');
    const report = join(dir, 'report');
    let finished = false;
    const run = runClient(
      ['migrate', file, '--team', TEAM, '--concurrency', '16', '--quiet', '--report', report],
      { IMPORT_BASE_URL: balancer.url, IMPORT_API_KEY: apiKey },
    ).finally(() => (finished = true));

    const created = () =>
      models.AccountImportProcess.countDocuments({
        importSupplier: SUPPLIER,
        krakenAccountNumber: { $ne: null },
      });
    await until(async () => (await created()) >= 60 || finished, '60 accounts created', 600_000);
    expect(finished, 'the client still running at the first kill').toBe(false);
    const atWebKill = await created();
    await webs[0]!.stop('SIGKILL');
    // The balancer passes the dead web process over: creations go on through the other one.
    await until(
      async () => (await created()) >= atWebKill + 30 || finished,
      '30 more accounts through the surviving web process',
      600_000,
    );
    expect(finished, 'the client still running at the sidecar kill').toBe(false);
    const atSidecarKill = await created();
    const sidecar = sidecars[1]!;
    await sidecar.stop('SIGKILL');
    // The surviving web process finds its database gone (its readiness says so); then the sidecar is back.
    await until(
      async () => {
        const res = await fetch(`http://127.0.0.1:${webPorts[1]}/readyz`);
        const body = (await res.json()) as { checks?: { database?: string } };
        return res.status === 503 && body.checks?.database !== 'ok';
      },
      "pod 2's web process to report its database down",
      120_000,
    );
    sidecars[1] = await startFerretDb({ port: sidecar.port, postgresqlUrl: pg.url });

    const client = await run;
    const lines = readFileSync(join(report, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    const outcomes = Object.fromEntries(
      [...new Set(lines.map((l) => l.outcome))].map((o) => [o, lines.filter((l) => l.outcome === o).length]),
    );
    const accounts = await models.Account.countDocuments({ importSupplier: SUPPLIER });
    const numbers = await models.Account.distinct('number', { importSupplier: SUPPLIER });
    const imported = await created();
    const processed = await models.ImportEvent.countDocuments({
      importSupplier: SUPPLIER,
      event: 'PROCESSED',
    });
    const { published, undelivered } = await awaitDelivered(models, SUPPLIER, receiver);
    console.info(
      `pod failures: web 1 SIGKILLed after ${atWebKill} accounts, pod 2's sidecar after ${atSidecarKill} (restarted); ` +
        `client lines ${lines.length} ${JSON.stringify(outcomes)}, requests ${lines.reduce((n, l) => n + l.attempts, 0)}; ` +
        `accounts ${accounts}, duplicates ${accounts - numbers.length}, lost ${ACCOUNTS - imported}, ` +
        `PROCESSED events ${processed}; events delivered ${published - undelivered()}/${published}`,
    );
    expect(client.code, client.stderr).toBe(0);
    expect(lines).toHaveLength(ACCOUNTS);
    expect(lines.filter((l) => l.outcome !== 'created' && l.outcome !== 'already_imported')).toEqual([]);
    expect(accounts).toBe(ACCOUNTS);
    expect(numbers).toHaveLength(ACCOUNTS);
    expect(imported).toBe(ACCOUNTS);
    expect(processed).toBe(ACCOUNTS);
    expect(undelivered(), 'events not delivered').toBe(0);
    // Only the killed web process is gone.
    expect(
      [...webs.slice(1), ...workers].filter((c) => c.proc.exitCode !== null || c.proc.signalCode),
    ).toEqual([]);
  },
);
