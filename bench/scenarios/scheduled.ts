import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { startReceiver, startServiceProcesses, untilActive } from '../scheduled-env.js';
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
    const receiver = await startReceiver();
    const { arrivals, received } = receiver;
    // Subscribed before the migration starts, as a team would.
    const activeFrom: number[] = [];
    for (let i = 0; i < ENDPOINTS; i++)
      activeFrom.push(await receiver.subscribe(e.app.storage, config, 'Bench Org'));
    await untilActive(activeFrom);
    const service = await startServiceProcesses(config, CLIENT_CONCURRENCY).catch(async (err: unknown) => {
      await receiver.close();
      await e.close();
      throw err;
    });
    try {
      const schedule = (external: string): Promise<number> =>
        service.schedule(
          e.headers,
          { ...e.template, import_supplier: SUPPLIER, external_account_number: external },
          TEAM,
        );
      const processed = () =>
        e.app.db.models.AccountImportProcess.countDocuments({
          importSupplier: SUPPLIER,
          krakenAccountNumber: { $ne: null },
        });
      // Watched on the cohort's progress counts in Redis, then confirmed once in the database: polling the
      // database every 100 ms would add its own CPU to the database's figures (v1's run polls nothing).
      const counters = e.app.storage.progress!;
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
        ...service.pids,
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
        invalid_signatures: receiver.counts.invalidSignatures,
        cpu_ms_per_account: cpuPerAccount,
        /** Database commands (FerretDB's counters) and Redis commands (INFO commandstats) per account. */
        commands_per_account: commandsPerAccount,
      };
    } finally {
      await service.stop();
      await receiver.close();
      await e.close();
    }
  },
};
export default scenario;
