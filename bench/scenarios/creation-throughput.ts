import { Agent, request } from 'node:http';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { validAccountPayload } from '../../test/domain/fixtures.js';
import { creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { latencySummary, round, type Scenario } from '../support.js';

/** Account counts to run, each in a fresh database: `BENCH_ACCOUNTS=500,1000,2000` (default 10,000). */
const SIZES = (process.env.BENCH_ACCOUNTS ?? '10000').split(',').map((s) => Number(s.trim()));
const LIMIT = Number(process.env.BENCH_CREATION_CONCURRENCY ?? 50);
const WORKER_CONCURRENCY = process.env.BENCH_WORKER_CONCURRENCY ?? '50';

type Timed = { status: number; ms: number; body: string };

/**
 * (b) End-to-end throughput over real HTTP: one `web` and one `worker` process (the service's own entry
 * points), a client keeping as many accounts in flight as the concurrency limit allows, each account staged
 * then created. A 429 (should not happen at exactly the limit) is retried after a short pause and counted.
 */
const scenario: Scenario = {
  name: 'creation-throughput',
  description: `Stage + create throughput via HTTP (1 web + 1 worker process, ${LIMIT} in flight = the limit), at ${SIZES.join(', ')} accounts`,
  async run(env) {
    const results: Record<string, unknown> = {
      in_flight: LIMIT,
      worker_concurrency: Number(WORKER_CONCURRENCY),
    };
    for (const size of SIZES) results[`accounts_${size}`] = await runOnce(env.config, size);
    return results;
  },
};
export default scenario;

async function runOnce(makeConfig: Parameters<Scenario['run']>[0]['config'], size: number) {
  const config = makeConfig({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
  const e = await creationEnv(config, { workers: false });
  const port = await freePort();
  // BENCH_CHILD_NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) profiles the web and worker processes.
  const base = childEnv(
    config,
    process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {},
  );
  const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
  const worker = startProcess('worker', { ...base, WORKER_CONCURRENCY });
  // node:http with keep-alive: a lighter client than fetch, so the load generator takes less of the
  // machine's two cores from the service it measures.
  const agent = new Agent({ keepAlive: true, maxSockets: LIMIT });
  try {
    await waitForPort(port);
    const url = (path: string) => `http://127.0.0.1:${port}/v1/data-import/account-import-process/${path}/`;
    const post = (path: string, body: string): Promise<Timed> =>
      new Promise((resolve, reject) => {
        const t0 = performance.now();
        const req = request(
          url(path),
          {
            method: 'POST',
            agent,
            headers: { ...e.headers, 'content-length': Buffer.byteLength(body) },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                body: Buffer.concat(chunks).toString(),
                ms: performance.now() - t0,
              }),
            );
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const template = validAccountPayload();
    const externals = Array.from({ length: size }, (_, i) => `TP-${String(i).padStart(6, '0')}`);
    const stageMs: number[] = [];
    const createMs: number[] = [];
    let retried429 = 0;
    const started = performance.now();
    let done = 0;
    let lastReport = started;
    await pool(externals, LIMIT, async (ext) => {
      const staged = await post(
        'create-or-update',
        JSON.stringify({ ...template, import_supplier: SUPPLIER, external_account_number: ext }),
      );
      if (staged.status !== 201) throw new Error(`stage ${ext}: ${staged.status} ${staged.body}`);
      stageMs.push(staged.ms);
      const request = JSON.stringify({
        external_account_number: ext,
        import_supplier_code: SUPPLIER,
        operations_team_name: TEAM,
      });
      for (;;) {
        const created = await post('process', request);
        if (created.status === 429) {
          retried429++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        if (created.status !== 201) throw new Error(`create ${ext}: ${created.status} ${created.body}`);
        createMs.push(created.ms);
        break;
      }
      done++;
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        console.log(`  ${done}/${size} after ${round((lastReport - started) / 1000, 1)} s`);
      }
    });
    const seconds = (performance.now() - started) / 1000;
    const imported = await e.app.db.models.AccountImportProcess.countDocuments({
      krakenAccountNumber: { $ne: null },
    });
    if (imported !== size) throw new Error(`expected ${size} imported accounts, found ${imported}`);
    return {
      accounts: size,
      seconds: round(seconds, 1),
      accounts_per_s: round(size / seconds, 1),
      stage: latencySummary(stageMs),
      create: latencySummary(createMs),
      retried_429: retried429,
    };
  } finally {
    agent.destroy();
    await Promise.all([web.stop(), worker.stop()]);
    await e.close();
  }
}
