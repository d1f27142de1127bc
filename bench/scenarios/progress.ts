import { Operations } from '../../src/use-cases/admin/operations.js';
import type { ProgressEntry } from '../../src/storage/progress/progress-entry.js';
import { creationEnv, SUPPLIER } from '../creation-env.js';
import { latencySummary, round, type Scenario } from '../support.js';

const SMALL = 1_000;
const LARGE = Number(process.env.BENCH_PROGRESS_ACCOUNTS ?? 100_000);
const LARGE_SUPPLIER = 'BENCH_LARGE';
const WARMUP = 100;
const REQUESTS = Number(process.env.BENCH_PROGRESS_REQUESTS ?? 1_000);
const BATCH = 2_000;
const CODES = Array.from({ length: 10 }, (_, i) => `bench_failure_${i}`);
const PATHS = [
  'billing_postcode',
  'customers.0.email',
  'ledgers.0.ledger_balance',
  'meter_points.0.mpan',
  'tariff',
];

/** The i-th account's state: 70% processed, 20% pending, 5% in progress, 5% errored (10 codes, 1 to 5 paths). */
function entryFor(i: number, now: number): ProgressEntry {
  const r = i % 20;
  const status = r < 14 ? 'PROCESSED' : r < 18 ? 'PENDING' : r < 19 ? 'IN_PROGRESS' : 'ERRORED';
  const code = status === 'ERRORED' ? CODES[i % CODES.length]! : '';
  // Spread over the last 15 minutes, so that the rates and the per-minute buckets have something to read.
  const t = now - (i % 900) * 1_000;
  return {
    q: 1,
    s: status,
    c: code,
    a: code ? PATHS.slice(0, 1 + (i % PATHS.length)) : [],
    t,
    k: status === 'PROCESSED' ? `A-${i.toString(16).toUpperCase().padStart(8, '0')}` : '',
    e: code ? JSON.stringify({ code, detail: 'Bench failure.', domain: 'import_process' }) : '',
    x: 0,
  };
}

/**
 * Cohort progress (issue 20): `GET …/import-suppliers/<code>/progress/` over real HTTP (keep-alive, one request
 * at a time, the two suppliers' requests interleaved) from an in-process API server, for a supplier of 1,000
 * accounts and one of 100,000. Both cohorts are written straight into the progress counters through the storage
 * API (`ProgressCounters.apply`, what every state change calls) with the same mix of statuses, failure codes and
 * paths, so that only the number of accounts differs: creating 100,000 accounts would take too long. The answer
 * is read from the counters (a constant number of Redis reads), so the goal is the same p50 within 20%.
 */
const scenario: Scenario = {
  name: 'progress',
  description: `GET progress/ p50 for a supplier of ${SMALL} and of ${LARGE} accounts (counters written through the storage API, same mix; ${REQUESTS} requests each, interleaved)`,
  async run(env) {
    const config = env.config();
    const e = await creationEnv(config, { workers: false, payload: 'minimal' });
    try {
      const ops = new Operations(e.app.storage, config.API_KEY_HASH_SECRET);
      await ops.createSupplier(LARGE_SUPPLIER, 'Bench Org', { documentRoot: 'bench-large' });
      const counters = e.app.storage.progress!;
      const now = Date.now();
      const populate = async (supplier: string, count: number) => {
        const t0 = performance.now();
        for (let start = 0; start < count; start += BATCH) {
          const writes = [];
          for (let i = start; i < Math.min(count, start + BATCH); i++) {
            writes.push(counters.apply(supplier, `PROG-${String(i).padStart(7, '0')}`, entryFor(i, now)));
          }
          await Promise.all(writes);
        }
        return round((performance.now() - t0) / 1000, 1);
      };
      const seeded = {
        small_s: await populate(SUPPLIER, SMALL),
        large_s: await populate(LARGE_SUPPLIER, LARGE),
      };

      const address = await e.app.listen({ port: 0, host: '127.0.0.1' });
      const url = (supplier: string) => `${address}/v2/data-import/import-suppliers/${supplier}/progress/`;
      const once = async (supplier: string, expected: number) => {
        const t0 = performance.now();
        const res = await fetch(url(supplier), { headers: e.headers });
        const body = (await res.json()) as { accounts?: { total: number } };
        const ms = performance.now() - t0;
        if (res.status !== 200 || body.accounts?.total !== expected)
          throw new Error(`progress of ${supplier}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        return ms;
      };
      for (let i = 0; i < WARMUP; i++) {
        await once(SUPPLIER, SMALL);
        await once(LARGE_SUPPLIER, LARGE);
      }
      const small: number[] = [];
      const large: number[] = [];
      for (let i = 0; i < REQUESTS; i++) {
        small.push(await once(SUPPLIER, SMALL));
        large.push(await once(LARGE_SUPPLIER, LARGE));
      }
      const a = latencySummary(small);
      const b = latencySummary(large);
      return {
        seed: seeded,
        [`accounts_${SMALL}`]: a,
        [`accounts_${LARGE}`]: b,
        p50_ratio_large_to_small: round(b.p50_ms / a.p50_ms, 2),
        within_20_percent: Math.abs(b.p50_ms / a.p50_ms - 1) <= 0.2,
      };
    } finally {
      await e.close();
    }
  },
};
export default scenario;
