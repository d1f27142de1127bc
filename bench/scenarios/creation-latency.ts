import { createAccount } from '../../src/creation/create-account.js';
import { processKey } from '../../src/models/account-import-process.js';
import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { latencySummary, round, type Scenario } from '../support.js';

const PER_RUN = Number(process.env.BENCH_CREATE_ACCOUNTS ?? 100);

/**
 * (a) Create latency through the API (queue hop: enqueue, worker, result back) against the same creation
 * function called in-process, at 1 and at 50 in flight. The difference at p50 is the queue hop's cost.
 */
const scenario: Scenario = {
  name: 'creation-latency',
  description: `Create latency p50/p99 via the API + worker vs in-process createAccount, at 1 and 50 in flight (${PER_RUN} accounts per run)`,
  async run(env) {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: '0' });
    const e = await creationEnv(config);
    try {
      const { models } = e.app.db;
      const teamId = (await models.OperationsTeam.findOne({ name: TEAM }).lean())!._id.toHexString();
      const results: Record<string, unknown> = {};
      for (const inFlight of [1, 50]) {
        for (const mode of ['in_process', 'api'] as const) {
          const externals = Array.from({ length: PER_RUN }, (_, i) => `${mode}-${inFlight}-${i}`);
          await pool(externals, 20, async (ext) => void (await e.stage(ext)));
          const samples: number[] = [];
          const started = performance.now();
          await pool(externals, inFlight, async (ext) => {
            const t0 = performance.now();
            if (mode === 'api') {
              const res = await e.create(ext);
              if (res.statusCode !== 201) throw new Error(`create ${ext}: ${res.statusCode} ${res.body}`);
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
