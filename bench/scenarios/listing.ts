import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Types } from 'mongoose';
import { processKey } from '../../src/storage/processes/process-key.js';
import { creationEnv, SUPPLIER } from '../creation-env.js';
import { round, type Scenario } from '../support.js';

/** The largest list (default 100,000); it is also measured at a tenth of that, to show memory stays flat. */
const TOTAL = Number(process.env.BENCH_LIST_ACCOUNTS ?? 100_000);
const SIZES = [...new Set([Math.max(1, Math.round(TOTAL / 10)), TOTAL])];
const BATCH = 2_000;

/** A full GC before each measurement, so the baseline is the live heap only. */
function gc() {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/**
 * (c) Listing a supplier's accounts over real HTTP from an in-process API server: time to first byte, total
 * time, and the process's heap and RSS sampled every 10 ms while the response streams, above a baseline taken
 * after a full GC. Processes are seeded straight through the model in bulk (half imported, half pending).
 */
const scenario: Scenario = {
  name: 'listing',
  description: `GET all-account-import-processes at ${SIZES.join(' and ')} accounts: time and peak memory while streaming`,
  async run(env) {
    const config = env.config();
    const e = await creationEnv(config, { workers: false });
    try {
      const supplier = await e.app.db.models.ImportSupplier.findOne({ code: SUPPLIER }).lean();
      const address = await e.app.listen({ port: 0, host: '127.0.0.1' });
      const results: Record<string, unknown> = {};
      let seeded = 0;
      for (const size of SIZES) {
        const t0 = performance.now();
        seeded = await seed(e.app.db.models, supplier!.organisationId, seeded, size);
        const seedSeconds = (performance.now() - t0) / 1000;
        results[`accounts_${size}`] = {
          seed_s: round(seedSeconds, 1),
          ...(await measure(
            `${address}/v1/data-import/all-account-import-processes/${SUPPLIER}/`,
            e.headers,
            size,
          )),
        };
      }
      return results;
    } finally {
      await e.close();
    }
  },
};
export default scenario;

async function seed(
  models: Awaited<ReturnType<typeof creationEnv>>['app']['db']['models'],
  organisationId: Types.ObjectId,
  from: number,
  to: number,
): Promise<number> {
  const now = new Date();
  for (let start = from; start < to; start += BATCH) {
    const docs = [];
    for (let i = start; i < Math.min(to, start + BATCH); i++) {
      const external = `LIST-${String(i).padStart(7, '0')}`;
      const imported = i % 2 === 0;
      docs.push({
        _id: processKey(SUPPLIER, external),
        organisationId,
        importSupplier: SUPPLIER,
        externalAccountNumber: external,
        stagedAt: now,
        skipped: false,
        krakenAccountNumber: imported ? `A-${i.toString(16).toUpperCase().padStart(8, '0')}` : null,
        accountCreatedAt: imported ? now : null,
        creationAttempt: imported ? 1 : 0,
        creationJobId: null,
        createdAt: now,
        updatedAt: now,
      });
    }
    await models.AccountImportProcess.insertMany(docs, { ordered: false, lean: true });
  }
  return to;
}

async function measure(url: string, headers: Record<string, string>, expected: number) {
  gc();
  const base = process.memoryUsage();
  let peakHeap = base.heapUsed;
  let peakRss = base.rss;
  const sample = () => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed);
    peakRss = Math.max(peakRss, m.rss);
  };
  const sampler = setInterval(sample, 10);
  const t0 = performance.now();
  let firstByteMs = NaN;
  let bytes = 0;
  let items = 0;
  try {
    const res = await fetch(url, { headers });
    if (res.status !== 200) throw new Error(`list: ${res.status} ${await res.text()}`);
    // Consumed chunk by chunk (never buffered whole), counting items by their opening brace.
    for await (const chunk of res.body!) {
      if (Number.isNaN(firstByteMs)) firstByteMs = performance.now() - t0;
      bytes += chunk.byteLength;
      for (const byte of chunk) if (byte === 0x7b) items++;
    }
  } finally {
    clearInterval(sampler);
  }
  sample();
  const totalMs = performance.now() - t0;
  if (items !== expected) throw new Error(`expected ${expected} items, got ${items}`);
  const mb = (n: number) => round(n / 2 ** 20, 1);
  return {
    items,
    bytes,
    first_byte_ms: round(firstByteMs, 1),
    total_ms: round(totalMs, 1),
    items_per_s: Math.round(items / (totalMs / 1000)),
    baseline_heap_mb: mb(base.heapUsed),
    peak_heap_above_baseline_mb: mb(peakHeap - base.heapUsed),
    baseline_rss_mb: mb(base.rss),
    peak_rss_above_baseline_mb: mb(peakRss - base.rss),
  };
}
