import { processStatuses, type ProcessStatus } from '../domain/import-process/state.js';
import { processKey } from '../models/account-import-process.js';
import type { Models } from '../models/index.js';
import { formatUtcDatetime } from '../schemas/primitives.js';
import { storageFor } from '../storage/index.js';
import { entryOf, type ProgressCounters, type ProgressEntry } from '../storage/progress-counters.js';

/**
 * A supplier's cohort progress (counts by v2 status, rates, ETA, failures, post-import items) read from the
 * counters the state changes keep (`storage/progress-counters.ts`): a constant number of Redis reads, whatever
 * the cohort's size; the drill-down to the accounts behind a count; and the operator's rebuild from the records.
 */

export const postImportResources = [
  'notes',
  'transactions',
  'statements',
  'billing_documents',
  'payment_instructions',
] as const;

/** The post-import events' resource names, by the body's names. */
const resourceOf: Record<(typeof postImportResources)[number], string> = {
  notes: 'notes',
  transactions: 'transactions',
  statements: 'statements',
  billing_documents: 'billing_documents',
  payment_instructions: 'payment_instruction',
};

/** A change older than this without its count is repaired from the process's history. */
const REPAIR_AFTER_MS = 1_000;
/** A noted change still not written after this was never written (its writer died before the insert). */
const ABANDONED_AFTER_MS = 60_000;
const REPAIR_BATCH = 200;

/** Counts any change noted but not counted (a writer that died between its write and its count). */
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
        await counters.apply(supplier, change.ext, entry, { pending: member });
        repaired++;
      } else if (abandoned) await counters.forget(supplier, member);
    } else {
      const there = await models.ImportEvent.exists({ _id: change.id });
      if (there) {
        await counters.post(supplier, change.id, change.resource, change.count, member);
        repaired++;
      } else if (abandoned) await counters.forget(supplier, member);
    }
  }
  return repaired;
}

export type ProgressBody = ReturnType<typeof describeProgress>;

export async function readProgress(
  models: Models,
  counters: ProgressCounters,
  supplier: { code: string; status: string },
  now: Date,
) {
  await repairPending(models, counters, supplier.code);
  const nowMinute = Math.floor(now.getTime() / 60_000);
  const [counts, minutes] = await Promise.all([
    counters.counts(supplier.code),
    counters.minutes(supplier.code, nowMinute - 15, nowMinute),
  ]);
  return describeProgress(supplier, counts, minutes, now);
}

/**
 * Accounts processed per minute over the last 1, 5 and 15 minutes, from per-minute counts ending with the current
 * minute (at least 16 of them). The last n minutes end now: this minute so far, the n − 1 whole minutes before it,
 * and of the minute before those the part still inside the window (its accounts taken as spread evenly over it).
 * Just after a minute begins, the last minute is then mostly the one before, not an empty one.
 */
export function ratesOf(minutes: readonly { P: number }[], now: Date) {
  const elapsed = (now.getTime() % 60_000) / 60_000;
  const processedIn = (n: number) => {
    const inside = minutes.slice(-n).reduce((sum, m) => sum + m.P, 0);
    const edge = minutes.at(-n - 1)?.P ?? 0;
    return inside + edge * (1 - elapsed);
  };
  const rate = (n: number) => Math.round((processedIn(n) / n) * 10) / 10;
  return { perMinute: { last_1m: rate(1), last_5m: rate(5), last_15m: rate(15) }, processedIn };
}

function describeProgress(
  supplier: { code: string; status: string },
  counts: Record<string, number>,
  minutes: { minute: number; P: number; E: number }[],
  now: Date,
) {
  const accounts = Object.fromEntries(processStatuses.map((s) => [s, Math.max(0, counts[s] ?? 0)])) as Record<
    ProcessStatus,
    number
  >;
  const total = processStatuses.reduce((sum, s) => sum + accounts[s], 0);
  const { perMinute, processedIn } = ratesOf(minutes, now);
  const waiting = accounts.PENDING + accounts.IN_PROGRESS;
  const eta_seconds = perMinute.last_5m > 0 ? Math.round((waiting / (processedIn(5) / 5)) * 60) : null;
  return {
    import_supplier_code: supplier.code,
    status: supplier.status,
    as_of: formatUtcDatetime(now),
    accounts: { total, ...accounts },
    skipped: Math.max(0, counts.SKIPPED ?? 0),
    processed_per_minute: perMinute,
    eta_seconds,
    failures: failuresOf(counts),
    post_import: Object.fromEntries(
      postImportResources.map((r) => [r, Math.max(0, counts[`p:${resourceOf[r]}`] ?? 0)]),
    ) as Record<(typeof postImportResources)[number], number>,
  };
}

function failuresOf(counts: Record<string, number>) {
  const byCode = new Map<string, { count: number; attrs: { attr: string; count: number }[] }>();
  for (const [field, n] of Object.entries(counts)) {
    if (field.startsWith('f:') && n > 0) {
      const code = field.slice(2);
      byCode.set(code, { ...(byCode.get(code) ?? { attrs: [] }), count: n });
    }
  }
  for (const [field, n] of Object.entries(counts)) {
    if (!field.startsWith('a:') || n <= 0) continue;
    const tab = field.indexOf('\t');
    const failure = byCode.get(field.slice(2, tab));
    failure?.attrs.push({ attr: field.slice(tab + 1), count: n });
  }
  const byCount = <T extends { count: number }>(a: T & { key: string }, b: T & { key: string }) =>
    b.count - a.count || (a.key < b.key ? -1 : 1);
  return [...byCode.entries()]
    .map(([code, f]) => ({ key: code, code, count: f.count, attrs: f.attrs }))
    .sort(byCount)
    .slice(0, 20)
    .map(({ code, count, attrs }) => ({
      code,
      count,
      attrs: attrs
        .map((a) => ({ key: a.attr, ...a }))
        .sort(byCount)
        .slice(0, 5)
        .map(({ attr, count: c }) => ({ attr, count: c })),
    }));
}

/**
 * Every supplier of an organisation with its progress summary (counts, rates, ETA; not the failures nor the
 * post-import items): the page's overview. A constant number of reads per supplier.
 */
export async function readSummaries(
  models: Models,
  counters: ProgressCounters,
  suppliers: { code: string; status: string }[],
  now: Date,
) {
  return Promise.all(
    suppliers.map(async (supplier) => {
      const body = await readProgress(models, counters, supplier, now);
      const { failures, post_import, ...summary } = body;
      void failures;
      void post_import;
      return summary;
    }),
  );
}

export const TIMELINE_MAX_MINUTES = 60;

/** Per minute over the last `span` minutes, oldest first: processed and errored (the page's chart). */
export async function readTimeline(counters: ProgressCounters, supplier: string, now: Date, span = 60) {
  const nowMinute = Math.floor(now.getTime() / 60_000);
  const minutes = await counters.minutes(supplier, nowMinute - span + 1, nowMinute);
  return minutes.map((m) => ({
    minute: formatUtcDatetime(new Date(m.minute * 60_000)),
    processed: m.P,
    errored: m.E,
  }));
}

export const drillStatuses = [...processStatuses, 'SKIPPED'] as const;
export type DrillStatus = (typeof drillStatuses)[number];
export const PAGE_SIZE = 100;

/** The opaque cursor: the last row's change time and account number. */
export function encodeCursor(t: number, ext: string): string {
  return Buffer.from(JSON.stringify([t, ext])).toString('base64url');
}

export function decodeCursor(text: string): { t: number; ext: string } | null {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(value) || value.length !== 2) return null;
    const [t, ext] = value as unknown[];
    if (typeof t !== 'number' || !Number.isFinite(t) || typeof ext !== 'string') return null;
    return { t, ext };
  } catch {
    return null;
  }
}

/** One page of the accounts behind a count, oldest change first. */
export async function listAccounts(
  counters: ProgressCounters,
  supplier: string,
  query: { status: DrillStatus; code?: string | undefined; after: { t: number; ext: string } | null },
) {
  const code = query.status === 'ERRORED' || query.status === 'DRY_RUN_ERRORED' ? query.code : undefined;
  // A code filters failures only: another status has no account with a code.
  if (query.code !== undefined && code === undefined) return { results: [], next: null };
  const rows = await counters.page(supplier, query.status, code, query.after, PAGE_SIZE);
  const shown = rows.slice(0, PAGE_SIZE);
  const last = shown[shown.length - 1];
  return {
    results: shown.map(({ ext, entry, t }) => describeRow(ext, entry, t, query.status)),
    next: rows.length > PAGE_SIZE && last ? encodeCursor(last.t, last.ext) : null,
  };
}

function describeRow(ext: string, entry: ProgressEntry | null, t: number, status: DrillStatus) {
  return {
    external_account_number: ext,
    status,
    kraken_identifier: entry?.k ? entry.k : null,
    latest_error: entry?.e ? (JSON.parse(entry.e) as { code: string; detail: string; domain: string }) : null,
    // An empty list comes back from Redis's Lua JSON as an object.
    error_paths: Array.isArray(entry?.a) ? entry.a : [],
    modified_at: formatUtcDatetime(new Date(entry?.t ?? t)),
  };
}

export type RebuildReport = {
  import_supplier_code: string;
  processes: number;
  drifted: boolean;
  differences: { field: string; counted: number; rebuilt: number }[];
};

/**
 * Rebuilds a supplier's counters from the records: every process's history (its v2 status as the per-account
 * endpoint answers it) and the post-import events. Says what the counters held that differs. Meant for a quiet
 * cohort: a change landing while it runs is counted again by that process's next change (or a second rebuild).
 */
export async function rebuildProgress(
  models: Models,
  counters: ProgressCounters,
  supplier: string,
): Promise<RebuildReport> {
  const before = await counters.counts(supplier);
  const events = storageFor(models).events;
  const expected: Record<string, number> = {};
  const bump = (field: string, n = 1) => (expected[field] = (expected[field] ?? 0) + n);
  const seen = new Set<string>();
  let processes = 0;
  const cursor = models.AccountImportProcess.find({ importSupplier: supplier })
    .select({ externalAccountNumber: 1, stagedAt: 1, krakenAccountNumber: 1, skipped: 1, updatedAt: 1 })
    .lean()
    .cursor({ batchSize: 1000 });
  for await (const process of cursor) {
    const ext = process.externalAccountNumber;
    const state = await events.state(process._id);
    const entry = entryOf(state, {
      krakenAccountNumber: process.krakenAccountNumber,
      staged: process.stagedAt != null,
      at: process.updatedAt ?? undefined,
    }) ?? { q: -1, s: '', c: '', a: [], t: (process.updatedAt ?? new Date(0)).getTime(), k: '', e: '', x: 0 };
    if (process.skipped) entry.x = 1;
    if (!entry.s && !entry.x) continue;
    processes++;
    seen.add(ext);
    if (entry.x) bump('SKIPPED');
    else {
      bump(entry.s);
      if (entry.c) {
        bump(`f:${entry.c}`);
        for (const a of entry.a) bump(`a:${entry.c}\t${a}`);
      }
    }
    await counters.apply(supplier, ext, entry, { force: true });
  }
  for await (const [ext] of counters.entries(supplier)) {
    if (!seen.has(ext)) await counters.removeEntry(supplier, ext);
  }
  const posted: string[] = [];
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
    posted.push(event._id);
    bump(`p:${data.resource}`, data.count);
  }
  await counters.resetCounts(supplier, expected, posted);
  const fields = new Set([...Object.keys(before), ...Object.keys(expected)]);
  const differences = [...fields]
    .map((field) => ({ field, counted: before[field] ?? 0, rebuilt: expected[field] ?? 0 }))
    .filter((d) => d.counted !== d.rebuilt)
    .sort((a, b) => (a.field < b.field ? -1 : 1));
  return { import_supplier_code: supplier, processes, drifted: differences.length > 0, differences };
}
