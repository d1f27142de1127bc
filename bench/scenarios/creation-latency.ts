import { createAccount } from '../../src/creation/create-account.js';
import { processKey } from '../../src/models/account-import-process.js';
import { jobId } from '../../src/workers/catalog.js';
import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { latencySummary, round, type Scenario } from '../support.js';

const PER_RUN = Number(process.env.BENCH_CREATE_ACCOUNTS ?? 100);

/**
 * (a) Create latency through the API (queue hop: enqueue, worker, result back) against the same creation
 * function called in-process, at 1 and at 50 in flight. The difference at p50 is the queue hop's cost. API runs
 * also report the median of each phase, taken from the queue's own events: request to job added (HTTP, auth,
 * slot), added to active (worker pick-up), active to completed (the worker's run, creation included, and
 * BullMQ's completion), completed to response.
 */
const scenario: Scenario = {
  name: 'creation-latency',
  description: `Create latency p50/p99 via the API + worker vs in-process createAccount, at 1 and 50 in flight (${PER_RUN} accounts per run)`,
  async run(env) {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: '0' });
    const e = await creationEnv(config);
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
      const results: Record<string, unknown> = {};
      for (const inFlight of [1, 50]) {
        for (const mode of ['in_process', 'api'] as const) {
          const externals = Array.from({ length: PER_RUN }, (_, i) => `${mode}-${inFlight}-${i}`);
          await pool(externals, 20, async (ext) => void (await e.stage(ext)));
          const samples: number[] = [];
          const phases: Record<
            'to_job_added' | 'added_to_active' | 'active_to_completed' | 'completed_to_response',
            number[]
          > = {
            to_job_added: [],
            added_to_active: [],
            active_to_completed: [],
            completed_to_response: [],
          };
          const started = performance.now();
          await pool(externals, inFlight, async (ext) => {
            const t0 = performance.now();
            if (mode === 'api') {
              const res = await e.create(ext);
              const t1 = performance.now();
              if (res.statusCode !== 201) throw new Error(`create ${ext}: ${res.statusCode} ${res.body}`);
              const job = seen.get(jobId('create', encodeURIComponent(processKey(SUPPLIER, ext)), '1'));
              if (job?.added && job.active && job.completed) {
                phases.to_job_added.push(job.added - t0);
                phases.added_to_active.push(job.active - job.added);
                phases.active_to_completed.push(job.completed - job.active);
                phases.completed_to_response.push(t1 - job.completed);
              }
            } else {
              const out = await createAccount(
                { db: e.app.db, config, clock: () => new Date() },
                {
                  processId: processKey(SUPPLIER, ext),
                  operationsTeamId: teamId,
                  dryRun: false,
                  jobId: `bench-${ext}`,
                },
              );
              if (!out.ok) throw new Error(`create ${ext}: ${JSON.stringify(out)}`);
            }
            samples.push(performance.now() - t0);
          });
          const seconds = (performance.now() - started) / 1000;
          results[`${mode}_${inFlight}_in_flight`] = {
            ...latencySummary(samples),
            accounts_per_s: round(PER_RUN / seconds, 1),
            ...(mode === 'api'
              ? {
                  phases_p50_ms: Object.fromEntries(
                    Object.entries(phases).map(([name, list]) => [name, latencySummary(list).p50_ms]),
                  ),
                }
              : {}),
          };
        }
      }
      return results;
    } finally {
      await e.close();
    }
  },
};
export default scenario;
