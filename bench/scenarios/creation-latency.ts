import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, QueueEvents, Worker } from 'bullmq';
import type { Config } from '../../src/config.js';
import { createAccount } from '../../src/use-cases/creation/from-process.js';
import { producerConnection, workerConnection } from '../../src/infra/redis.js';
import { waitForFinish } from '../../src/infra/wait-for-finish.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { jobId, retention } from '../../src/jobs/catalog.js';
import { until } from '../../test/creation/support.js';
import { creationEnv, PAYLOAD_KINDS, pool, SUPPLIER, TEAM, type PayloadKind } from '../creation-env.js';
import { latencySummary, round, type BenchEnv, type Scenario } from '../support.js';
import { redisKeys } from '../../src/infra/redis-keys.js';

const PER_RUN = Number(process.env.BENCH_CREATE_ACCOUNTS ?? 400);
const WARM_UP = 20;

type Phase = 'to_job_added' | 'added_to_active' | 'active_to_completed' | 'completed_to_response';

/**
 * (a) Create latency through the API (queue hop: enqueue, worker, result back) against the same creation
 * function called in-process, at 1 and at 50 in flight. The difference at p50 is the queue hop's cost.
 * At 1 in flight the two alternate account by account, so both meet the same database (its tables grow
 * as the run goes); at 50 they run one after the other. Both modes warm up first. API runs also report the
 * median of each phase, taken from the queue's own events: request to job added (HTTP, auth, slot), added
 * to active (worker pick-up), active to completed (the worker's run, creation included, and BullMQ's
 * completion), completed to response (negative when the response came first: the worker publishes the
 * result just before BullMQ completes the job). For scale, the run also measures BullMQ's own round trip
 * with a processor that only waits (`bullmq_round_trip_floor_p50_ms`).
 */
const scenario: Scenario = {
  name: 'creation-latency',
  description: `Realistic and minimal accounts: create latency p50/p99 via the API + worker vs in-process createAccount, at 1 and 50 in flight (${PER_RUN} accounts per mode and run)`,
  async run(env) {
    const results: Record<string, unknown> = {};
    for (const kind of PAYLOAD_KINDS) results[kind] = await runKind(env, kind);
    return results;
  },
};
export default scenario;

async function runKind(env: BenchEnv, kind: PayloadKind): Promise<Record<string, unknown>> {
  {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: '0' });
    const e = await creationEnv(config, { payload: kind });
    // Where an API create's time goes, from the queue's own events (no instrumentation in the service).
    const seen = new Map<string, { added?: number; active?: number; completed?: number }>();
    const at = (id: string | undefined, phase: 'added' | 'active' | 'completed') => {
      if (!id) return;
      seen.set(id, { ...seen.get(id), [phase]: performance.now() });
    };
    e.app.queues.queue('account-creation').on('waiting', (job) => at(job.id, 'added'));
    e.workers!.workers.find((w) => w.name === 'account-creation')!.on('active', (job) =>
      at(job.id, 'active'),
    );
    e.app.queues.events('account-creation').on('completed', ({ jobId }) => at(jobId, 'completed'));
    try {
      const { models } = e.app.db;
      const teamId = (await models.OperationsTeam.findOne({ name: TEAM }).lean())!._id.toHexString();
      const phases = (): Record<Phase, number[]> => ({
        to_job_added: [],
        added_to_active: [],
        active_to_completed: [],
        completed_to_response: [],
      });

      type ApiRun = { samples: number[]; calls: Array<{ ext: string; t0: number; t1: number }> };
      const viaApi = async (ext: string, into?: ApiRun) => {
        const t0 = performance.now();
        const res = await e.create(ext);
        const t1 = performance.now();
        if (res.statusCode !== 201) throw new Error(`create ${ext}: ${res.statusCode} ${res.body}`);
        into?.samples.push(t1 - t0);
        into?.calls.push({ ext, t0, t1 });
      };
      // Phases are read once the run is over: a completed event may arrive after its response.
      const phasesOf = async (run: ApiRun) => {
        const list = phases();
        const times = (ext: string) =>
          seen.get(jobId('create', encodeURIComponent(processKey(SUPPLIER, ext)), '1'));
        await until(
          async () => run.calls.every(({ ext }) => times(ext)?.completed),
          'every completed event',
          5_000,
        );
        for (const { ext, t0, t1 } of run.calls) {
          const job = times(ext)!;
          if (!job.added || !job.active || !job.completed) continue;
          list.to_job_added.push(job.added - t0);
          list.added_to_active.push(job.active - job.added);
          list.active_to_completed.push(job.completed - job.active);
          list.completed_to_response.push(t1 - job.completed);
        }
        return list;
      };
      const inProcess = async (ext: string, into?: number[]) => {
        const t0 = performance.now();
        const out = await createAccount(
          { storage: e.app.storage, config, clock: () => new Date() },
          {
            processId: processKey(SUPPLIER, ext),
            operationsTeamId: teamId,
            dryRun: false,
            jobId: `bench-${ext}`,
          },
        );
        if (!out.ok) throw new Error(`create ${ext}: ${JSON.stringify(out)}`);
        into?.push(performance.now() - t0);
      };
      const staged = async (prefix: string, n: number) => {
        const externals = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
        await pool(externals, 20, async (ext) => void (await e.stage(ext)));
        return externals;
      };

      // Warm-up: JIT, caches, Lua scripts loaded on every connection.
      for (const ext of await staged('warm-api', WARM_UP)) await viaApi(ext);
      for (const ext of await staged('warm-in-process', WARM_UP)) await inProcess(ext);

      const results: Record<string, unknown> = {};
      const summarise = (samples: number[], seconds: number, phaseLists?: Record<Phase, number[]>) => ({
        ...latencySummary(samples),
        accounts_per_s: round(PER_RUN / seconds, 1),
        ...(phaseLists
          ? {
              phases_p50_ms: Object.fromEntries(
                Object.entries(phaseLists).map(([name, list]) => [name, latencySummary(list).p50_ms]),
              ),
            }
          : {}),
      });

      // 1 in flight, alternating.
      {
        const api: ApiRun = { samples: [], calls: [] };
        const local: number[] = [];
        const apiExternals = await staged('api-1', PER_RUN);
        const localExternals = await staged('in_process-1', PER_RUN);
        let apiSeconds = 0;
        let localSeconds = 0;
        for (let i = 0; i < PER_RUN; i++) {
          let t = performance.now();
          await inProcess(localExternals[i]!, local);
          localSeconds += (performance.now() - t) / 1000;
          t = performance.now();
          await viaApi(apiExternals[i]!, api);
          apiSeconds += (performance.now() - t) / 1000;
        }
        results.in_process_1_in_flight = summarise(local, localSeconds);
        results.api_1_in_flight = summarise(api.samples, apiSeconds, await phasesOf(api));
        results.bullmq_round_trip_floor_p50_ms = await bullmqFloor(
          config,
          Math.round(latencySummary(local).p50_ms),
        );
      }

      // 50 in flight, one mode after the other.
      for (const mode of ['in_process', 'api'] as const) {
        const externals = await staged(`${mode}-50`, PER_RUN);
        const api: ApiRun = { samples: [], calls: [] };
        const local: number[] = [];
        const started = performance.now();
        await pool(externals, 50, (ext) => (mode === 'api' ? viaApi(ext, api) : inProcess(ext, local)));
        const seconds = (performance.now() - started) / 1000;
        if (mode === 'api') {
          results.api_50_in_flight = summarise(api.samples, seconds, await phasesOf(api));
        } else {
          results.in_process_50_in_flight = summarise(local, seconds);
        }
      }
      const p50 = (name: string) => (results[name] as { p50_ms: number }).p50_ms;
      results.queue_hop_p50_ms = {
        at_1_in_flight: round(p50('api_1_in_flight') - p50('in_process_1_in_flight')),
        at_50_in_flight: round(p50('api_50_in_flight') - p50('in_process_50_in_flight')),
      };
      return results;
    } finally {
      await e.close();
    }
  }
}

/**
 * What BullMQ alone costs at 1 in flight on this machine, for scale: a bare queue, a job whose processor
 * only waits (a timer as long as creation's p50, so processes go idle as they do around a real creation),
 * and the wait for its `completed` event: p50 of the round trip minus the processor's own time.
 */
async function bullmqFloor(config: Config, processorMs: number): Promise<number> {
  const prefix = redisKeys(`${config.QUEUE_PREFIX}-floor`).queuePrefix('floor');
  const producer = producerConnection(config);
  producer.on('error', () => undefined);
  const queue = new Queue('floor', { connection: producer, prefix });
  const events = new QueueEvents('floor', { connection: workerConnection(config), prefix });
  const inside = new Map<string, number>();
  const worker = new Worker(
    'floor',
    async (job) => {
      const t = performance.now();
      await sleep(processorMs);
      inside.set(job.id!, performance.now() - t);
      return { ok: true };
    },
    { connection: workerConnection(config), prefix },
  );
  try {
    await events.waitUntilReady();
    await worker.waitUntilReady();
    const hops: number[] = [];
    for (let i = 0; i < PER_RUN + WARM_UP; i++) {
      const t0 = performance.now();
      const job = await queue.add('floor', {}, { jobId: `floor-${i}`, ...retention });
      const done = await waitForFinish(events, queue, job, 10_000, new Set());
      if (done.timedOut) throw new Error('floor job timed out');
      if (i >= WARM_UP) hops.push(performance.now() - t0 - inside.get(job.id!)!);
    }
    return latencySummary(hops).p50_ms;
  } finally {
    await worker.close();
    await events.close();
    await queue.obliterate({ force: true });
    await queue.close();
    producer.disconnect();
  }
}
