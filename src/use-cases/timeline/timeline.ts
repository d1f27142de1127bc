import { emptyState, foldEvent, type ProcessState } from '../../domain/import-process/state.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';
import type { ProcessRow } from '../../storage/processes/import-processes.js';
import { toEvent } from '../../storage/processes/process-event-records.js';
import { accountIdFor } from '../../storage/records/created-accounts.js';
import type { TimelineDelivery, TimelineEvent } from '../../storage/timeline/timeline-records.js';
import { stateOfRecord } from '../../storage/webhooks/webhook-steps.js';
import { buildSteps, compareSteps, dueAt, type Step } from './steps.js';
import { explain, type WhyDeps } from './why.js';

/**
 * An account's timeline (`GET /v2/data-import/accounts/{code}/{external}/timeline/`): every step of its
 * migration in order, a page at a time, and why it is where it is now. Bounded: at most `TIMELINE_BOUNDS` of
 * each record are read, so the cost of one page does not grow past them whatever the account's history.
 */

/** What one timeline reads at most of each record (`truncated` says a bound was reached). */
export const TIMELINE_BOUNDS = { events: 200, postImports: 500, deliveries: 1000 } as const;
export const TIMELINE_PAGE_MAX = 100;

export type TimelineDeps = WhyDeps & { clock: () => Date };
export type TimelineCursor = { t: number; id: string };

export function encodeTimelineCursor(step: Pick<Step, 'atMs' | 'id'>): string {
  return Buffer.from(JSON.stringify([step.atMs, step.id])).toString('base64url');
}

export function decodeTimelineCursor(text: string): TimelineCursor | null {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(value) || value.length !== 2) return null;
    const [t, id] = value as unknown[];
    if (typeof t !== 'number' || !Number.isFinite(t) || typeof id !== 'string' || id.length > 256)
      return null;
    return { t, id };
  } catch {
    // silent-ok: not a cursor this endpoint answered; the route says so (400 at `cursor`)
    return null;
  }
}

/** One page of the account's timeline, with why it is where it is now. */
export async function readTimeline(
  deps: TimelineDeps,
  process: ProcessRow,
  page: { limit: number; after: TimelineCursor | null },
) {
  const now = deps.clock().getTime();
  const { steps, truncated, state, events } = await collect(deps, process, now);
  const after = page.after;
  const rest = after ? steps.filter((s) => compareSteps(s, { atMs: after.t, id: after.id }) > 0) : steps;
  const shown = rest.slice(0, page.limit);
  const last = shown[shown.length - 1];
  const latest = state.latestEvent;
  const task = state.status === 'PENDING' && state.task ? events.find((e) => e.seq === state.task!.id) : null;
  const why = await explain(deps, {
    process,
    state,
    latestAt: latest ? latest.occurredAt.getTime() : null,
    dueAt: task
      ? dueAt({ occurredAt: task.occurredAt, fields: JSON.parse(task.data) as Record<string, unknown> })
      : null,
    postImports: steps.filter((s) => s.step === 'post_import').length,
    worker: [...events].reverse().find((e) => e.event === 'STARTED')?.worker ?? null,
    now,
  });
  return {
    import_supplier_code: process.importSupplier,
    external_account_number: process.externalAccountNumber,
    status: state.status ?? (process.krakenAccountNumber ? 'PROCESSED' : 'PENDING'),
    as_of: formatUtcDatetime(new Date(now)),
    steps: shown.map((s) => ({
      id: s.id,
      step: s.step,
      at: formatUtcDatetime(new Date(s.atMs)),
      duration_ms: s.durationMs,
      detail: s.detail,
      data: s.data,
    })),
    next: rest.length > shown.length && last ? encodeTimelineCursor(last) : null,
    truncated,
    why,
  };
}

/** Every record of the account the timeline is made of, read by `_id` in a few rounds. */
async function collect(deps: TimelineDeps, process: ProcessRow, now: number) {
  const { timeline } = deps.storage;
  const key = process._id;
  const accountId = accountIdFor(key);
  const created = !!process.krakenAccountNumber;
  const [history, restaged, journal, endpoints] = await Promise.all([
    timeline.events(key, TIMELINE_BOUNDS.events),
    timeline.restages(key, TIMELINE_BOUNDS.events),
    created ? timeline.journal(accountId, TIMELINE_BOUNDS.postImports) : { entries: [], more: false },
    timeline.endpointIds(process.organisationId),
  ]);
  // The writes' events (a payment instruction's is named by the instruction: found only with endpoints).
  const writes = journal.entries.flatMap((e) => (e.request ? [e.request.key] : []));
  if (endpoints.length > 0 && journal.entries.some((e) => e.kind === 'payment_instruction')) {
    const active = await deps.storage.paymentInstructions.findActive(accountId);
    if (active) writes.push(`payment_instruction:${String(active._id)}`);
  }
  const postEvents = endpoints.length > 0 ? await timeline.postImportEvents(key, writes) : [];
  const published = [...history.events.filter((e) => e.type), ...postEvents.filter((e) => e.type)];
  const ids = published
    .flatMap((e) => endpoints.map((endpoint) => `${e.eventId}.${endpoint.toHexString()}`))
    .slice(0, TIMELINE_BOUNDS.deliveries);
  const deliveries = await withLatest(deps, ids.length > 0 ? await timeline.deliveries(ids) : []);
  const steps = buildSteps({
    events: history.events,
    restages: restaged.restages,
    journal: journal.entries,
    deliveries,
    now,
  });
  return {
    steps,
    truncated:
      history.more || restaged.more || journal.more || published.length * endpoints.length > ids.length,
    // Past the bound the history read is not all of it: the state is the log's own (read on from its head).
    state: history.more ? await deps.storage.events.state(key) : stateOf(history.events),
    events: history.events,
  };
}

/** Each delivery with its latest state (a pending one's record may be a step behind). */
async function withLatest(deps: TimelineDeps, deliveries: TimelineDelivery[]) {
  return Promise.all(
    deliveries.map(async (d) => {
      const recorded = stateOfRecord(d);
      const latest =
        recorded.status === 'pending'
          ? await deps.storage.webhooks.deliveries.latest(d._id, recorded)
          : recorded;
      return { ...d, latest };
    }),
  );
}

/** The process's state, folded from the history read (the same fold as every reader's). */
function stateOf(events: readonly TimelineEvent[]): ProcessState {
  return events.reduce((state, e) => foldEvent(state, e.seq, toEvent(e.seq, e)), emptyState);
}
