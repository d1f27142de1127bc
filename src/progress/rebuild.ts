import type { Logger } from 'pino';
import { processKey } from '../models/account-import-process.js';
import type { Models } from '../models/index.js';
import { storageFor } from '../storage/index.js';
import { entryOf, type ProgressCounters, type ProgressEntry } from '../storage/progress-counters.js';

/**
 * The progress counts derived again from the database, the record: every import process's head (its v2 status
 * as the per-account endpoint answers it) and every post-import event. Safe on an active cohort: the rebuild
 * fills a new epoch while the changes keep applying to it and to the one served (each by its event's
 * position, so whoever gets to an account first, the newest wins), and the new epoch is served in one step
 * once it is complete. No count of the served epoch moves meanwhile except by the changes themselves.
 */

export type RebuildReport = {
  import_supplier_code: string;
  processes: number;
  drifted: boolean;
  differences: { field: string; counted: number; rebuilt: number }[];
};

/** A rebuild not heard from in this long is taken over by another process. */
export const REBUILD_BEAT_TIMEOUT_MS = 30_000;
/** Processes whose heads are read at once, and applied to Redis in one call. */
const BATCH = 100;
const READS_IN_PARALLEL = 16;
const POST_BATCH = 500;

class Superseded extends Error {}

/** Reads the heads of one batch of processes, a few at a time. */
async function headsOf(
  models: Models,
  batch: {
    _id: string;
    externalAccountNumber: string;
    stagedAt?: Date | null;
    krakenAccountNumber?: string | null;
    skipped?: boolean | null;
    updatedAt?: Date | null;
  }[],
): Promise<[string, ProgressEntry][]> {
  const events = storageFor(models).events;
  const out: [string, ProgressEntry][] = [];
  for (let i = 0; i < batch.length; i += READS_IN_PARALLEL) {
    const slice = batch.slice(i, i + READS_IN_PARALLEL);
    const states = await Promise.all(slice.map((p) => events.state(p._id)));
    slice.forEach((process, j) => {
      const at = process.updatedAt ?? undefined;
      const entry = entryOf(states[j]!, {
        krakenAccountNumber: process.krakenAccountNumber,
        staged: process.stagedAt != null,
        at,
      }) ?? { q: -1, s: '', c: '', a: [], t: (at ?? new Date(0)).getTime(), k: '', e: '', x: 0 };
      if (process.skipped) entry.x = 1;
      if (entry.s || entry.x) out.push([process.externalAccountNumber, entry]);
    });
  }
  return out;
}

/** Fills `epoch` from the database; returns how many processes it counted. Throws Superseded when it is no longer built. */
async function fill(models: Models, counters: ProgressCounters, supplier: string, epoch: string) {
  let processes = 0;
  let batch: Parameters<typeof headsOf>[1] = [];
  const flush = async () => {
    const entries = await headsOf(models, batch);
    batch = [];
    processes += entries.length;
    if (!(await counters.rebuildApply(supplier, epoch, entries))) throw new Superseded();
  };
  const cursor = models.AccountImportProcess.find({ importSupplier: supplier })
    .select({ externalAccountNumber: 1, stagedAt: 1, krakenAccountNumber: 1, skipped: 1, updatedAt: 1 })
    .lean()
    .cursor({ batchSize: 1000 });
  for await (const process of cursor) {
    batch.push(process as (typeof batch)[number]);
    if (batch.length >= BATCH) await flush();
  }
  if (batch.length > 0) await flush();

  let posts: { id: string; resource: string; count: number }[] = [];
  const flushPosts = async () => {
    if (!(await counters.rebuildPost(supplier, epoch, posts))) throw new Superseded();
    posts = [];
  };
  const postEvents = models.ImportEvent.find({
    importSupplier: supplier,
    seq: null,
    type: 'data_import.import_process.post_import.completed-v1',
  })
    .select({ _id: 1, data: 1 })
    .lean()
    .cursor({ batchSize: 1000 });
  for await (const event of postEvents) {
    const data = JSON.parse(event.data) as { resource: string; count: number };
    posts.push({ id: event._id, resource: data.resource, count: data.count });
    if (posts.length >= POST_BATCH) await flushPosts();
  }
  await flushPosts();
  return processes;
}

function differencesOf(before: Record<string, number>, after: Record<string, number>) {
  const fields = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...fields]
    .map((field) => ({ field, counted: before[field] ?? 0, rebuilt: after[field] ?? 0 }))
    .filter((d) => d.counted !== d.rebuilt)
    .sort((a, b) => (a.field < b.field ? -1 : 1));
}

/**
 * Rebuilds epoch `epoch` (begun by `beginRebuild`) and serves it. Null when another rebuild superseded it or
 * it could not be served (a failover under it: the counts stay marked for another rebuild).
 */
export async function runRebuild(
  models: Models,
  counters: ProgressCounters,
  supplier: string,
  epoch: string,
): Promise<RebuildReport | null> {
  try {
    const processes = await fill(models, counters, supplier, epoch);
    const served = await counters.finishRebuild(supplier, epoch);
    if (!served) return null;
    const differences = differencesOf(served.before, served.after);
    return { import_supplier_code: supplier, processes, drifted: differences.length > 0, differences };
  } catch (err) {
    if (err instanceof Superseded) return null;
    throw err;
  }
}

/**
 * The operator's rebuild (`import-admin progress rebuild`): whatever the counts hold, they are derived again
 * from the database now. Says what the served counts held that differs.
 */
export async function rebuildProgress(
  models: Models,
  counters: ProgressCounters,
  supplier: string,
): Promise<RebuildReport> {
  for (let attempt = 0; ; attempt++) {
    const start = await counters.beginRebuild(supplier, true, REBUILD_BEAT_TIMEOUT_MS);
    if (!start.run) throw new Error('the rebuild could not begin');
    const report = await runRebuild(models, counters, supplier, start.epoch);
    if (report) return report;
    if (attempt >= 3) throw new Error(`the rebuild of ${supplier} was superseded ${attempt + 1} times`);
  }
}

/**
 * Counts any change noted but not counted (a writer that died between its write and its count), from the
 * database: a process change by the process's head, a post-import event when the event its writer noted is
 * there (and was written by that writer: another writer's attempt at the same event counts nothing).
 */
const REPAIR_AFTER_MS = 1_000;
/** A noted change still not written after this was never written (its writer died before the insert). */
const ABANDONED_AFTER_MS = 60_000;
const REPAIR_BATCH = 200;

export async function repairPending(models: Models, counters: ProgressCounters, supplier: string) {
  const pending = await counters.pending(supplier, REPAIR_AFTER_MS, REPAIR_BATCH);
  const events = storageFor(models).events;
  let repaired = 0;
  for (const { member, change, at } of pending) {
    const abandoned = Date.now() - at > ABANDONED_AFTER_MS;
    if (change.kind === 'event') {
      const state = await events.state(processKey(supplier, change.ext));
      const entry = entryOf(state);
      if (entry && state.seq >= change.seq) {
        await counters.apply(supplier, change.ext, entry, member);
        repaired++;
      } else if (abandoned) await counters.forget(supplier, member);
    } else {
      const there = await models.ImportEvent.findById(change.id, { writer: 1 })
        .lean<{ writer: string }>()
        .exec();
      if (there && (change.writer === undefined || there.writer === change.writer)) {
        await counters.post(supplier, change.id, change.resource, change.count, member);
        repaired++;
      } else if (there || abandoned) await counters.forget(supplier, member);
    }
  }
  return repaired;
}

/**
 * Every worker process checks each supplier's counts this often and rebuilds those not settled: lost (nothing
 * held), marked stale (a change could not be counted), or held by another Redis server than the one that built
 * them (a failover or a restart). One process rebuilds a supplier at a time (the first to begin it; another
 * takes over if it stops beating). Returns a stop function.
 */
export function watchProgress(
  deps: { models: Models; counters: ProgressCounters; log: Pick<Logger, 'info' | 'warn'> },
  intervalMs: number,
): () => Promise<void> {
  const { models, counters, log } = deps;
  let running: Promise<void> | null = null;
  let stopped = false;
  const round = async () => {
    const suppliers = await models.ImportSupplier.find({}, { code: 1 }).lean<{ code: string }[]>().exec();
    for (const { code } of suppliers) {
      if (stopped) return;
      const start = await counters.beginRebuild(code, false, REBUILD_BEAT_TIMEOUT_MS);
      if (!start.run) continue;
      const began = Date.now();
      const report = await runRebuild(models, counters, code, start.epoch);
      if (report)
        log.info(
          {
            supplier: code,
            processes: report.processes,
            drifted: report.drifted,
            differences: report.differences.length,
            ms: Date.now() - began,
          },
          'progress counts rebuilt from the database',
        );
    }
  };
  const timer = setInterval(() => {
    if (running || stopped) return;
    running = round()
      .catch((err: Error) => log.warn({ err: err.message }, 'progress check failed; tried again next round'))
      .finally(() => {
        running = null;
      });
  }, intervalMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
