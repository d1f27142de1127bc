import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { startReceiver, startServiceProcesses, untilActive } from '../scheduled-env.js';
import { cpuMeter, latencySummary, round, type Scenario } from '../support.js';

/** Phases per run (`BENCH_SHARE_PHASES`, default 16, a multiple of 4): half with an endpoint, in the order ABBA. */
const PHASES = Number(process.env.BENCH_SHARE_PHASES ?? 16);
/** Realistic accounts per phase (`BENCH_SHARE_ACCOUNTS`, default 1,500). */
const PER_PHASE = Number(process.env.BENCH_SHARE_ACCOUNTS ?? 1_500);
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
/**
 * `BENCH_SHARE_CONTROL=1`: the control run, with no endpoint subscribed on either side. It should read 1.0 within
 * its spread: a method that favoured one tenant's phases would show here.
 */
const CONTROL = process.env.BENCH_SHARE_CONTROL === '1';
const CLIENT_CONCURRENCY = 50;
const WARM_UP = 100;
/** The second tenant's organisation and cohort: nobody subscribed. */
const QUIET_ORG = 'Bench Org Quiet';
const QUIET_SUPPLIER = 'BENCH_QUIET';
/** Whether phase `i` is one with an endpoint: ABBA, so a machine speeding up or slowing down evens out. */
const withEndpoint = (i: number) => i % 4 === 0 || i % 4 === 3;

/**
 * The share of v2 throughput one subscribed endpoint costs, measured within one run. Scheduled creation as in
 * `scheduled`, in alternating phases of `PER_PHASE` accounts: two tenants on the same `web` and `worker`
 * processes, one with an endpoint subscribed to `complete-v1` (its webhooks received and verified here), one with
 * none. Separate runs, minutes apart, read the machine at different speeds (on a shared machine, one run's CPU
 * per account can be 1.7 times another's), which drowned a difference of a few percent; short phases (10 to 15 s
 * each on this machine), in the order ABBA, read both sides at the same speeds. A phase runs from its first schedule to its last
 * PROCESSED event; the next starts once every account and webhook of the last has arrived. Reports accounts/s and
 * CPU per account on each side (over all its phases), their ratio, each pair's ratio, and every phase.
 */
const scenario: Scenario = {
  name: 'endpoint-share',
  description:
    `one subscribed endpoint's share of v2 throughput within one run (1 web + 1 worker process, creation limit ` +
    `${LIMIT}): ${PHASES} alternating phases (ABBA) of ${PER_PHASE} realistic accounts scheduled, by a tenant with ` +
    `one endpoint subscribed to complete-v1 and one with none; accounts/s and CPU per account on each side, and ` +
    `their ratio`,
  async run(env) {
    if (PHASES < 4 || PHASES % 4 !== 0) throw new Error('BENCH_SHARE_PHASES must be a multiple of 4');
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT), WEBHOOK_ALLOW_PRIVATE: 'true' });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    const quietHeaders = await e.addTenant(QUIET_ORG, QUIET_SUPPLIER);
    const tenants = {
      subscribed: { headers: e.headers, supplier: SUPPLIER },
      quiet: { headers: quietHeaders, supplier: QUIET_SUPPLIER },
    };
    const receiver = await startReceiver();
    if (!CONTROL) await untilActive([await receiver.subscribe(e.app.storage, config, 'Bench Org')]);
    const service = await startServiceProcesses(config, CLIENT_CONCURRENCY).catch(async (err: unknown) => {
      await receiver.close();
      await e.close();
      throw err;
    });
    try {
      const counters = e.app.storage.progress!;
      const done = { subscribed: 0, quiet: 0 };
      /** Schedules `externals` for the tenant, then waits for their PROCESSED counts and (subscribed) webhooks. */
      const runBatch = async (side: keyof typeof tenants, externals: string[]) => {
        const { headers, supplier } = tenants[side];
        await pool(externals, CLIENT_CONCURRENCY, async (external) => {
          const payload = { ...e.template, import_supplier: supplier, external_account_number: external };
          const status = await service.schedule(headers, payload, TEAM);
          if (status !== 201) throw new Error(`schedule ${external}: ${status}`);
        });
        done[side] += externals.length;
        const deadline = Date.now() + 30 * 60_000;
        while (
          ((await counters.counts(supplier)).PROCESSED ?? 0) < done[side] ||
          receiver.received.size < (CONTROL ? 0 : done.subscribed)
        ) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${side}'s accounts`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      // Warm-up, not measured: both tenants, so both paths are compiled and connected.
      const warm = (prefix: string) => Array.from({ length: WARM_UP }, (_, i) => `${prefix}-${i}`);
      await runBatch('subscribed', warm('WS'));
      await runBatch('quiet', warm('WQ'));

      const pids = { database: env.dbPid, ...service.pids, redis: env.redisPid, bench: process.pid };
      const phases: { endpoint: boolean; started: number; cpu: Record<string, number | null> }[] = [];
      for (let i = 0; i < PHASES; i++) {
        const endpoint = withEndpoint(i);
        const externals = Array.from({ length: PER_PHASE }, (_, n) => `PH${i}-${String(n).padStart(6, '0')}`);
        const cpu = cpuMeter(pids);
        const started = Date.now();
        await runBatch(endpoint ? 'subscribed' : 'quiet', externals);
        phases.push({ endpoint, started, cpu: cpu.perItemMs(PER_PHASE) });
      }

      // Each phase's last PROCESSED, from its accounts' events (read once: on FerretDB it reads them all).
      const events = await e.app.db.models.ImportEvent.find({
        type: 'data_import.import_process.complete-v1',
      })
        .select({ eventId: 1, occurredAt: 1, externalAccountNumber: 1 })
        .lean();
      const last = new Map<number, number>();
      const latencies: number[] = [];
      for (const ev of events) {
        const phase = /^PH(\d+)-/.exec(ev.externalAccountNumber)?.[1];
        if (phase === undefined) continue;
        const at = ev.occurredAt.getTime();
        last.set(Number(phase), Math.max(last.get(Number(phase)) ?? 0, at));
        const arrived = receiver.arrivals.get(ev.eventId);
        if (phases[Number(phase)]!.endpoint && arrived !== undefined) latencies.push(arrived - at);
      }
      const measured = phases.map((p, i) => {
        const seconds = (last.get(i)! - p.started) / 1000;
        const service = ['database', 'web', 'worker', 'redis'].reduce((s, k) => s + (p.cpu[k] ?? 0), 0);
        return { ...p, seconds, perSecond: PER_PHASE / seconds, service };
      });
      const side = (endpoint: boolean) => {
        const mine = measured.filter((p) => p.endpoint === endpoint);
        const seconds = mine.reduce((s, p) => s + p.seconds, 0);
        const cpu = Object.fromEntries(
          Object.keys(pids).map((k) => [k, round(mean(mine.map((p) => p.cpu[k] ?? NaN)), 2)]),
        );
        return {
          accounts: mine.length * PER_PHASE,
          seconds: round(seconds, 1),
          accounts_per_s: round((mine.length * PER_PHASE) / seconds, 1),
          service_cpu_ms_per_account: round(mean(mine.map((p) => p.service)), 2),
          cpu_ms_per_account: cpu,
        };
      };
      const subscribed = side(true);
      const none = side(false);
      // Pairs: phases 2k and 2k+1, one of each side.
      const pairs = Array.from({ length: PHASES / 2 }, (_, k) => {
        const [a, b] = [measured[2 * k]!, measured[2 * k + 1]!];
        const [w, wo] = a.endpoint ? [a, b] : [b, a];
        return round(w.perSecond / wo.perSecond, 3);
      });
      return {
        control: CONTROL,
        phases: PHASES,
        accounts_per_phase: PER_PHASE,
        creation_limit: LIMIT,
        client_concurrency: CLIENT_CONCURRENCY,
        with_endpoint: subscribed,
        without_endpoint: none,
        /** With an endpoint against without: throughput, and service CPU per account (without / with). */
        throughput_ratio: round(subscribed.accounts_per_s / none.accounts_per_s, 3),
        service_cpu_ratio: round(none.service_cpu_ms_per_account / subscribed.service_cpu_ms_per_account, 3),
        pair_ratios: pairs,
        webhook_delivery_latency: latencySummary(latencies),
        webhooks_received: receiver.received.size,
        invalid_signatures: receiver.counts.invalidSignatures,
        per_phase: measured.map((p) => ({
          endpoint: p.endpoint,
          accounts_per_s: round(p.perSecond, 1),
          service_cpu_ms_per_account: round(p.service, 2),
        })),
      };
    } finally {
      await service.stop();
      await receiver.close();
      await e.close();
    }
  },
};
export default scenario;

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
