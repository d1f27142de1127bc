import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { creationEnv } from '../creation-env.js';
import { round, type Scenario } from '../support.js';
import { clientRun } from './client.js';

const ACCOUNTS = Number(process.env.BENCH_CLIENT_ACCOUNTS ?? 2_000);
/** The fixed concurrencies the default is measured against. */
const FIXED = (process.env.BENCH_CLIENT_FIXED ?? '8,16,32,50,64').split(',').map(Number);
/** The service's creation limit (its default). */
const LIMIT = 50;

/**
 * `import-client migrate` with its default options (adaptive concurrency, ceiling 64) against the same client
 * at each fixed concurrency of FIXED (`--no-adaptive`), on one service (web + worker, creation limit 50) in one
 * run, ACCOUNTS realistic accounts a run (stage + create): accounts/s, the share of requests the service refused
 * (429/503), and where the adaptive limit went. The default should be about as fast as the best fixed value
 * without knowing it, and keep the refusals to a few percent.
 */
const scenario: Scenario = {
  name: 'client-adaptive',
  description: `import-client migrate, default (adaptive, ceiling 64) vs --no-adaptive at ${FIXED.join(', ')}, ${ACCOUNTS} realistic accounts a run, creation limit ${LIMIT}`,
  async run(env) {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: String(LIMIT) });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
      .api_key;
    const port = await freePort();
    const base = childEnv(config);
    const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
    const worker = startProcess('worker', base);
    const dir = mkdtempSync(join(tmpdir(), 'bench-client-adaptive-'));
    try {
      await waitForPort(port);
      const baseUrl = `http://127.0.0.1:${port}`;
      const runs: Record<string, unknown>[] = [];
      const once = async (label: string, args: string[]) => {
        const r = await clientRun(baseUrl, key, e.template, label, dir, { accounts: ACCOUNTS, args });
        const c = r.concurrency;
        runs.push({
          run: label,
          accounts_per_s: r.rate,
          refused_pct: c.refused_pct,
          requests: c.requests,
          ...(c.mode === 'adaptive' ? { peak: c.peak, final: c.final, mean: c.mean, cuts: c.cuts } : {}),
        });
        return r.rate;
      };
      const adaptive = await once('default', []);
      const fixed: Record<string, number> = {};
      for (const n of FIXED)
        fixed[n] = await once(`fixed-${n}`, ['--concurrency', String(n), '--no-adaptive']);
      // Once more at the end: a drift of the machine over the scenario touches both sides.
      const adaptiveAgain = await once('default-again', []);
      const [bestN, bestRate] = Object.entries(fixed).sort((a, b) => b[1] - a[1])[0]!;
      const mean = (adaptive + adaptiveAgain) / 2;
      return {
        accounts_per_run: ACCOUNTS,
        creation_limit: LIMIT,
        runs,
        default_accounts_per_s: round(mean, 1),
        best_fixed: { concurrency: Number(bestN), accounts_per_s: bestRate },
        default_vs_best_fixed_pct: round((mean / bestRate - 1) * 100, 1),
      };
    } finally {
      await Promise.all([web.stop(), worker.stop()]);
      await e.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default scenario;
