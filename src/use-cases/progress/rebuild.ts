import type { Logger } from 'pino';
import { processKey } from '../../storage/processes/process-key.js';
import type { Storage } from '../../storage/index.js';
import { emptyState, foldEvent, type ProcessState } from '../../domain/import-process/state.js';
import type { ProgressCounters } from '../../storage/progress/progress-counters.js';
import { entryOf, type ProgressEntry } from '../../storage/progress/progress-entry.js';
import type { ProcessRow } from '../../storage/progress/progress-records.js';
import { toEvent } from '../../storage/processes/process-event-records.js';

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
/** Process heads applied to Redis in one call. */
const BATCH = 200;
const POST_BATCH = 500;

class Superseded extends Error {}

/** The storage of a process connected to Redis: the progress counters are there. */
export type CountedStorage = Storage & { progress: ProgressCounters };
export const isCounted = (storage: Storage): storage is CountedStorage => storage.progress !== null;
type HistoryEntry = { seq: number; event: string | null; data: string; run: string | null; occurredAt: Date };

/**
 * Every event of the supplier, in one pass over its events: the process histories by account (folded into
 * their heads below) and the post-import events, counted in `epoch` as they come. One read of the events
 * rather than a probe per process and position: the rebuild of a large cohort is bound by the database's scan.
 */
async function readEvents(storage: CountedStorage, supplier: string, epoch: string) {
  const counters = storage.progress;
  const histories = new Map<string, HistoryEntry[]>();
  let posts: { id: string; resource: string; count: number }[] = [];
  const flushPosts = async () => {
    if (!(await counters.rebuildPost(supplier, epoch, posts))) throw new Superseded();
    posts = [];
  };
  for await (const e of storage.progressRecords.events(supplier)) {
    if (e.seq === null || e.seq === undefined) {
      if (e.type !== 'data_import.import_process.post_import.completed-v1') continue;
      const data = JSON.parse(e.data) as { resource: string; count: number };
      posts.push({ id: e._id, resource: data.resource, count: data.count });
      if (posts.length >= POST_BATCH) await flushPosts();
      continue;
    }
    const list = histories.get(e.externalAccountNumber) ?? [];
    list.push({
      seq: e.seq,
      event: e.event ?? null,
      data: e.data,
      run: e.run ?? null,
      occurredAt: e.occurredAt,
    });
    histories.set(e.externalAccountNumber, list);
  }
  await flushPosts();
  return histories;
}

/** A process's head from its history's entries (positions from 0 on, as the per-account endpoint folds them). */
function headOf(entries: HistoryEntry[] | undefined): ProcessState {
  let state = emptyState;
  const sorted = (entries ?? []).sort((a, b) => a.seq - b.seq);
  for (const entry of sorted) {
    if (entry.seq !== state.seq + 1) break;
    state = foldEvent(state, entry.seq, toEvent(entry.seq, entry));
  }
  return state;
}

function entryOfRow(process: ProcessRow, state: ProcessState): ProgressEntry | null {
  const at = process.updatedAt ?? undefined;
  const entry = entryOf(state, {
    krakenAccountNumber: process.krakenAccountNumber,
    staged: process.stagedAt != null,
    at,
  }) ?? { q: -1, s: '', c: '', a: [], t: (at ?? new Date(0)).getTime(), k: '', e: '', x: 0 };
  if (process.skipped) entry.x = 1;
  return entry.s || entry.x ? entry : null;
}

/** Fills `epoch` from the database; returns how many processes it counted. Throws Superseded when it is no longer built. */
async function fill(storage: CountedStorage, supplier: string, epoch: string) {
  const counters = storage.progress;
  const histories = await readEvents(storage, supplier, epoch);
  let processes = 0;
  let batch: [string, ProgressEntry][] = [];
  const flush = async () => {
    processes += batch.length;
    if (!(await counters.rebuildApply(supplier, epoch, batch))) throw new Superseded();
    batch = [];
  };
  for await (const row of storage.progressRecords.processes(supplier)) {
    const entry = entryOfRow(row, headOf(histories.get(row.externalAccountNumber)));
    histories.delete(row.externalAccountNumber);
    if (entry) batch.push([row.externalAccountNumber, entry]);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
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
  storage: CountedStorage,
  supplier: string,
  epoch: string,
): Promise<RebuildReport | null> {
  try {
    const processes = await fill(storage, supplier, epoch);
    const served = await storage.progress.finishRebuild(supplier, epoch);
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
export async function rebuildProgress(storage: CountedStorage, supplier: string): Promise<RebuildReport> {
  for (let attempt = 0; ; attempt++) {
    const start = await storage.progress.beginRebuild(supplier, true, REBUILD_BEAT_TIMEOUT_MS);
    if (!start.run) throw new Error('the rebuild could not begin');
    const report = await runRebuild(storage, supplier, start.epoch);
    if (report) return report;
    if (attempt >= 3) throw new Error(`the rebuild of ${supplier} was superseded ${attempt + 1} times`);
  }
}

/** A change older than this without its count is repaired from the database. */
const REPAIR_AFTER_MS = 1_000;
/** A noted change still not written after this was never written (its writer died before the insert). */
const ABANDONED_AFTER_MS = 60_000;
const REPAIR_BATCH = 200;

/**
 * Counts any change noted but not counted (a writer that died between its write and its count), from the
 * database: a process change by the process's head, a post-import event when the event its writer noted is
 * there (and was written by that writer: another writer's attempt at the same event counts nothing).
 */
export async function repairPending(storage: CountedStorage, supplier: string) {
  const { progress: counters, events } = storage;
  const pending = await counters.pending(supplier, REPAIR_AFTER_MS, REPAIR_BATCH);
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
      const there = await storage.progressRecords.eventWriter(change.id);
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
  deps: { storage: Storage; log: Pick<Logger, 'info' | 'warn'> },
  intervalMs: number,
): () => Promise<void> {
  const { storage, log } = deps;
  if (!isCounted(storage)) throw new Error('the progress watch needs the progress counters (Redis)');
  let running: Promise<void> | null = null;
  let stopped = false;
  const round = async () => {
    for (const code of await storage.suppliers.codes()) {
      if (stopped) return;
      await checkSupplier(storage, code, log);
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

/** Rebuilds the supplier's counts unless they are settled or another process is rebuilding them. */
async function checkSupplier(storage: CountedStorage, code: string, log: Pick<Logger, 'info'>) {
  const start = await storage.progress.beginRebuild(code, false, REBUILD_BEAT_TIMEOUT_MS);
  if (!start.run) return;
  const began = Date.now();
  const report = await runRebuild(storage, code, start.epoch);
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
