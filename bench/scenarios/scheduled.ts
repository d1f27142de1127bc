import { createServer, Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WebhookOperations } from '../../src/admin/webhooks.js';
import { progressCountersOf } from '../../src/storage/progress-counters.js';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { commandMeter, cpuMeter, latencySummary, round, type Scenario } from '../support.js';

/** Realistic accounts scheduled per run: `BENCH_SCHEDULED_ACCOUNTS` (default 1,000). */
const ACCOUNTS = Number(process.env.BENCH_SCHEDULED_ACCOUNTS ?? 1_000);
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
/** `BENCH_SCHEDULED_WEBHOOK=0`: no endpoint subscribed (events written dispatched), to compare with v1's run. */
const WEBHOOK = process.env.BENCH_SCHEDULED_WEBHOOK !== '0';
/**
 * Endpoints subscribed, each receiving every `complete-v1` (`BENCH_SCHEDULED_ENDPOINTS`, default 1; 0 without
 * `WEBHOOK`): several multiply a delivery's cost, so that it stands out of the machine's spread.
 */
const ENDPOINTS = WEBHOOK ? Number(process.env.BENCH_SCHEDULED_ENDPOINTS ?? 1) : 0;
/**
 * Schedules in flight from the client (a schedule only stages and queues: it never waits for the creation):
 * `BENCH_SCHEDULED_IN_FLIGHT`, default 50, as many as `creation-throughput` keeps in flight, so that v2 and v1
 * are compared under the same load. A schedule's writes share the group commit's commands with the other
 * requests in flight: at 16 a schedule cost 2.6–2.8 insert commands per account against 1.3 at 50 (README).
 */
const CLIENT_CONCURRENCY = Number(process.env.BENCH_SCHEDULED_IN_FLIGHT ?? 50);
const WARM_UP = 100;

/**
 * v2 end to end over real HTTP: one `web` and one `worker` process; realistic accounts scheduled (window: now)
 * as fast as the client can send them; every account's `complete-v1` webhook received by a real HTTP receiver
 * in this process, which verifies each signature. Reports scheduled accounts/s from the first schedule to the
 * last PROCESSED event, and delivery latency: from the event's write (its `occurredAt`) to its arrival.
 */
const scenario: Scenario = {
  name: 'scheduled',
  description:
    `v2 scheduled creation end to end (1 web + 1 worker process, creation limit ${LIMIT}): ${ACCOUNTS} realistic ` +
    `accounts scheduled, each created and its complete-v1 webhook received and verified by each of BENCH_SCHEDULED_ENDPOINTS endpoints (default 1; none with BENCH_SCHEDULED_WEBHOOK=0); accounts/s schedule → ` +
    `PROCESSED, webhook delivery latency (event written → receiver), CPU and commands per account`,
  async run(env) {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT), WEBHOOK_ALLOW_PRIVATE: 'true' });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    /** First arrival of each event at the first endpoint (the latency), and every endpoint's arrivals (counted). */
    const arrivals = new Map<string, number>();
    const received = new Set<string>();
    let invalidSignatures = 0;
    /** Each endpoint's verifier (the library's, built once from its secret), by its path. */
    const verifiers = new Map<string, Webhook>();
    const receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = Date.now();
        const body = Buffer.concat(chunks).toString();
        const id = String(req.headers['webhook-id']);
        try {
          const verifier = verifiers.get(req.url ?? '');
          if (!verifier) throw new Error(`no endpoint at ${req.url}`);
          verifier.verify(body, {
            'webhook-id': id,
            'webhook-timestamp': String(req.headers['webhook-timestamp']),
            'webhook-signature': String(req.headers['webhook-signature']),
          });
          if (req.url === '/hooks/0' && !arrivals.has(id)) arrivals.set(id, at);
          received.add(`${req.url} ${id}`);
        } catch {
          invalidSignatures++;
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    let activeFrom = 0;
    for (let i = 0; i < ENDPOINTS; i++) {
      const endpoint = await new WebhookOperations(e.app.db.models, config).add(
        'Bench Org',
        `${receiverUrl}/hooks/${i}`,
        ['data_import.import_process.complete-v1'],
      );
      verifiers.set(`/hooks/${i}`, new Webhook(endpoint.secret));
      activeFrom = Math.max(activeFrom, Date.parse(endpoint.active_from));
    }
    // Subscribed before the migration starts, as a team would: its events are those from `active_from` on
    // (WEBHOOK_ACTIVATION_DELAY_MS after it was added).
    const activeIn = activeFrom - Date.now();
    if (activeIn > 0) await new Promise((r) => setTimeout(r, activeIn));

    const port = await freePort();
    // BENCH_CHILD_NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the web and worker processes.
    const base = childEnv(config, {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...(process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {}),
    });
    const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
    const worker = startProcess('worker', base);
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENT_CONCURRENCY });
    try {
      await waitForPort(port);
      const schedule = (external: string): Promise<number> =>
        new Promise((resolve, reject) => {
          const body = JSON.stringify({
            payload: {
              ...e.template,
              import_supplier: SUPPLIER,
              external_account_number: external,
              operations_team_name: TEAM,
            },
            task_params: { is_dry_run: false },
          });
          const req = request(
            `http://127.0.0.1:${port}/v2/data-import/accounts/`,
            { method: 'POST', agent, headers: { ...e.headers, 'content-length': Buffer.byteLength(body) } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
              res.on('error', reject);
            },
          );
          req.on('error', reject);
          req.end(body);
        });
      const processed = () =>
        e.app.db.models.AccountImportProcess.countDocuments({
          importSupplier: SUPPLIER,
          krakenAccountNumber: { $ne: null },
        });
      // Watched on the cohort's progress counts in Redis, then confirmed once in the database: polling the
      // database every 100 ms would add its own CPU to the database's figures (v1's run polls nothing).
      const counters = progressCountersOf(e.app.db.models)!;
      const counted = async () => (await counters.counts(SUPPLIER)).PROCESSED ?? 0;
      const waitFor = async (n: number, what: string) => {
        const deadline = Date.now() + 30 * 60_000;
        while ((await counted()) < n || received.size < n * ENDPOINTS || (await processed()) < n) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      // Warm-up, not measured.
      await pool(
        Array.from({ length: WARM_UP }, (_, i) => `SW-${i}`),
        CLIENT_CONCURRENCY,
        async (ext) => void (await schedule(ext)),
      );
      await waitFor(WARM_UP, 'the warm-up');
      const warmIds = new Set(arrivals.keys());

      const cpu = cpuMeter({
        database: env.dbPid,
        web: web.proc.pid,
        worker: worker.proc.pid,
        redis: env.redisPid,
        // This process: the client's schedules and the receiver's work (not the service's; on this machine
        // it competes with the service for the same cores).
        bench: process.pid,
      });
      const commands = await commandMeter(env);
      const externals = Array.from({ length: ACCOUNTS }, (_, i) => `SCH-${String(i).padStart(6, '0')}`);
      const scheduleMs: number[] = [];
      const started = Date.now();
      await pool(externals, CLIENT_CONCURRENCY, async (ext) => {
        const t0 = performance.now();
        const status = await schedule(ext);
        if (status !== 201) throw new Error(`schedule ${ext}: ${status}`);
        scheduleMs.push(performance.now() - t0);
      });
      const allScheduled = Date.now();
      await waitFor(WARM_UP + ACCOUNTS, 'every account and webhook');
      // Read before the check below, whose query reads the whole event collection on FerretDB.
      const cpuPerAccount = cpu.perItemMs(ACCOUNTS);
      const commandsPerAccount = await commands.perItem(ACCOUNTS);
      const events = await e.app.db.models.ImportEvent.find({
        type: 'data_import.import_process.complete-v1',
      })
        .select({ eventId: 1, occurredAt: 1, externalAccountNumber: 1 })
        .lean();
      const measured = events.filter(
        (ev) => !warmIds.has(ev.eventId) && ev.externalAccountNumber.startsWith('SCH-'),
      );
      const lastProcessed = Math.max(...measured.map((ev) => ev.occurredAt.getTime()));
      const latencies =
        ENDPOINTS > 0 ? measured.map((ev) => arrivals.get(ev.eventId)! - ev.occurredAt.getTime()) : [];
      const seconds = (lastProcessed - started) / 1000;
      return {
        accounts: ACCOUNTS,
        webhook_endpoint: ENDPOINTS > 0,
        webhook_endpoints: ENDPOINTS,
        creation_limit: LIMIT,
        client_concurrency: CLIENT_CONCURRENCY,
        schedule_seconds: round((allScheduled - started) / 1000, 1),
        schedule_request: latencySummary(scheduleMs),
        seconds_to_last_processed: round(seconds, 1),
        accounts_per_s: round(ACCOUNTS / seconds, 1),
        webhook_delivery_latency: latencySummary(latencies),
        webhooks_received: measured.length,
        invalid_signatures: invalidSignatures,
        cpu_ms_per_account: cpuPerAccount,
        /** Database commands (FerretDB's counters) and Redis commands (INFO commandstats) per account. */
        commands_per_account: commandsPerAccount,
      };
    } finally {
      agent.destroy();
      await Promise.all([web.stop(), worker.stop()]);
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
      await e.close();
    }
  },
};
export default scenario;
