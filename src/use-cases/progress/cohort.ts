import { processStatuses, type ProcessStatus } from '../../domain/import-process/state.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import type { ProgressCounters, ProgressSnapshot } from '../../storage/progress/progress-counters.js';
import type { ProgressEntry } from '../../storage/progress/progress-entry.js';
import { repairPending, type CountedStorage } from './rebuild.js';

/**
 * A supplier's cohort progress (counts by v2 status, rates, ETA, failures, post-import items) read from the
 * counters the state changes keep (`storage/progress/progress-counters.ts`): a constant number of Redis reads, whatever
 * the cohort's size; and the drill-down to the accounts behind a count. The rebuild from the records: `rebuild.ts`.
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

export type ProgressBody = ReturnType<typeof describeProgress>;

export async function readProgress(
  storage: CountedStorage,
  supplier: { code: string; status: string },
  now: Date,
) {
  await repairPending(storage, supplier.code);
  const nowMinute = Math.floor(now.getTime() / 60_000);
  const snapshot = await storage.progress.snapshot(supplier.code, nowMinute - 15, nowMinute);
  return describeProgress(supplier, snapshot, now);
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
  { counts, minutes, rebuilding }: ProgressSnapshot,
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
    rebuilding,
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
  storage: CountedStorage,
  suppliers: { code: string; status: string }[],
  now: Date,
) {
  return Promise.all(
    suppliers.map(async (supplier) => {
      const body = await readProgress(storage, supplier, now);
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
  const { minutes } = await counters.snapshot(supplier, nowMinute - span + 1, nowMinute);
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
