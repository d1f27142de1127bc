import { VOID_EVENT } from '../../domain/import-process/state.js';
import type {
  TimelineDelivery,
  TimelineEntry,
  TimelineEvent,
  TimelineRestage,
} from '../../storage/timeline/timeline-records.js';
import type { DeliveryState } from '../../storage/webhooks/webhook-steps.js';

/**
 * An account's steps from its records, in order (pure: `timeline.ts` reads the records). Each step has a stable
 * id that also orders steps of one instant (`e:` the history, by position; `s:` re-stages; `j:` post-import
 * writes, by journal entry; `w:` webhook deliveries), so a page's cursor `(time, id)` never repeats or skips one.
 */

export const stepKinds = [
  'staged',
  'restaged',
  'scheduled',
  'queued',
  'started',
  'created',
  'failed',
  'dry_run_succeeded',
  'cancelled',
  'post_import',
  'webhook',
] as const;
export type StepKind = (typeof stepKinds)[number];

export type Step = {
  id: string;
  step: StepKind;
  atMs: number;
  /** How long the step took (queued: until a worker started it; started: until its outcome), or null. */
  durationMs: number | null;
  detail: string;
  data: Record<string, unknown>;
};

export type StepRecords = {
  events: readonly TimelineEvent[];
  restages: readonly TimelineRestage[];
  journal: readonly TimelineEntry[];
  /** Deliveries with their latest state. */
  deliveries: readonly (TimelineDelivery & { latest: DeliveryState })[];
  now: number;
};

const pad = (n: number) => String(n).padStart(6, '0');
/** The history's steps: `:0` a v1 create's queueing, `:1` the event's own step, `:2` a task's queueing. */
const eventId = (seq: number, part: 0 | 1 | 2) => `e:${pad(seq)}:${part}`;
const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`);

type Parsed = TimelineEvent & { fields: Record<string, unknown> };

/** Every step of the account, ordered by time then id. */
export function buildSteps(records: StepRecords): Step[] {
  const steps = [
    ...historySteps(records),
    ...records.restages.map(restageStep),
    ...records.journal.flatMap(postImportStep),
    ...records.deliveries.map(webhookStep),
  ];
  return steps.sort(compareSteps);
}

export function compareSteps(a: Pick<Step, 'atMs' | 'id'>, b: Pick<Step, 'atMs' | 'id'>): number {
  return a.atMs - b.atMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function historySteps({ events, now }: StepRecords): Step[] {
  const parsed: Parsed[] = events
    .filter((e) => e.event && e.event !== VOID_EVENT)
    .map((e) => ({ ...e, fields: JSON.parse(e.data) as Record<string, unknown> }));
  const steps: Step[] = [];
  const scheduled = new Map<number, Parsed>();
  const queuedTasks = new Set<number>();
  parsed.forEach((e, i) => {
    const at = e.occurredAt.getTime();
    const f = e.fields;
    switch (e.event) {
      case 'CREATED':
        steps.push(step(eventId(e.seq, 1), 'staged', at, null, 'Staged: the payload passed every rule.', {}));
        break;
      case 'SCHEDULED': {
        scheduled.set(e.seq, e);
        const data = {
          task: e.seq,
          schedule_window_start: f.schedule_window_start,
          schedule_window_end: f.schedule_window_end,
          is_dry_run: f.is_dry_run === true,
        };
        const words = `Scheduled as task ${e.seq}: its payload staged, to start from ${String(f.schedule_window_start)} until ${String(f.schedule_window_end)}${data.is_dry_run ? ' (a dry run)' : ''}.`;
        steps.push(step(eventId(e.seq, 1), 'scheduled', at, null, words, data));
        break;
      }
      case 'STARTED': {
        const task = typeof f.task === 'number' ? f.task : null;
        const queued = queuedAt(e, task === null ? null : scheduled.get(task));
        if (queued !== null) {
          const id = task === null ? eventId(e.seq, 0) : eventId(task, 2);
          if (task !== null) queuedTasks.add(task);
          const from = Math.min(queued, at);
          steps.push(
            step(
              id,
              'queued',
              from,
              at - from,
              `Queued for a worker; one took it after ${seconds(at - from)}.`,
              {
                ...(task === null ? {} : { task }),
              },
            ),
          );
        }
        const outcome = parsed.slice(i + 1).find((o) => o.run === e.run && o.event !== 'STARTED');
        const running = !outcome && parsed[parsed.length - 1] === e;
        const end = outcome ? outcome.occurredAt.getTime() : running ? now : null;
        const worker = e.worker ?? null;
        const words = `Started on worker ${worker ?? '(not recorded)'}${task === null ? ' (a v1 create)' : ` (task ${task})`}${outcome ? `; it ended after ${seconds(end! - at)}` : running ? '; still running' : ''}.`;
        steps.push(
          step(eventId(e.seq, 1), 'started', at, end === null ? null : end - at, words, {
            worker,
            ...(task === null ? {} : { task }),
          }),
        );
        break;
      }
      case 'PROCESSED':
        steps.push(
          step(eventId(e.seq, 1), 'created', at, null, `Created as ${String(f.kraken_account_number)}.`, {
            kraken_account_number: f.kraken_account_number,
          }),
        );
        break;
      case 'ERRORED':
      case 'DRY_RUN_ERRORED':
        steps.push(failedStep(e, at));
        break;
      case 'DRY_RUN_SUCCEEDED':
        steps.push(
          step(eventId(e.seq, 1), 'dry_run_succeeded', at, null, 'The dry run would have created it.', {}),
        );
        break;
      case 'CANCELLED':
        steps.push(step(eventId(e.seq, 1), 'cancelled', at, null, 'Its scheduled task was cancelled.', {}));
        break;
    }
  });
  steps.push(...waitingTaskStep(parsed, scheduled, queuedTasks, now));
  return steps;
}

/** When a start's job was queued: a task's when it became due, a v1 create's as its worker recorded it. */
function queuedAt(start: TimelineEvent, task: Parsed | null | undefined): number | null {
  if (task) return dueAt(task);
  return start.queuedAt ? start.queuedAt.getTime() : null;
}

/** A task is due from its schedule or its window's start, whichever is later. */
export function dueAt(scheduled: Pick<Parsed, 'occurredAt' | 'fields'>): number {
  const start = Date.parse(String(scheduled.fields.schedule_window_start));
  return Math.max(scheduled.occurredAt.getTime(), Number.isNaN(start) ? 0 : start);
}

/** The task the process waits for, once due and not started: queued so far. */
function waitingTaskStep(
  parsed: readonly Parsed[],
  scheduled: ReadonlyMap<number, Parsed>,
  queuedTasks: ReadonlySet<number>,
  now: number,
): Step[] {
  const last = parsed[parsed.length - 1];
  if (last?.event !== 'SCHEDULED' || queuedTasks.has(last.seq)) return [];
  const due = dueAt(scheduled.get(last.seq)!);
  if (due > now) return [];
  return [
    step(eventId(last.seq, 2), 'queued', due, now - due, `Due; not started after ${seconds(now - due)}.`, {
      task: last.seq,
    }),
  ];
}

function failedStep(e: Parsed, at: number): Step {
  const error = (e.fields.error ?? {}) as { code?: string; detail?: string };
  const errors = Array.isArray(e.fields.errors) ? (e.fields.errors as { attr?: string }[]) : [];
  const paths = [...new Set(errors.map((x) => x.attr).filter((a): a is string => typeof a === 'string'))];
  const dryRun = e.event === 'DRY_RUN_ERRORED';
  const words = `${dryRun ? 'The dry run failed' : 'Failed'} with ${error.code ?? 'an error'}${paths.length > 0 ? ` at ${paths.join(', ')}` : ''}.`;
  return step(eventId(e.seq, 1), 'failed', at, null, words, {
    code: error.code ?? null,
    detail: error.detail ?? null,
    paths,
    dry_run: dryRun,
  });
}

function restageStep(r: TimelineRestage): Step {
  return step(`s:${pad(r.n)}`, 'restaged', r.at.getTime(), null, 'Staged again with other data.', {
    payload: r.hash,
  });
}

/** Journal entry kinds as the post-import resources they are (the opening entry and figures are none). */
const resources: Record<string, string> = {
  transactions: 'transactions',
  statements: 'statements',
  billing: 'billing_documents',
  notes: 'notes',
  payment_instruction: 'payment_instruction',
};

function postImportStep(entry: TimelineEntry): Step[] {
  const resource = resources[entry.kind];
  if (!resource) return [];
  const count = entry.request?.count ?? (resource === 'payment_instruction' ? 1 : null);
  const words =
    resource === 'payment_instruction'
      ? 'Payment instruction recorded as active.'
      : `Post-import ${resource.replace('_', ' ')}: ${count ?? 'some'} written.`;
  return [
    step(`j:${pad(entry.seq)}`, 'post_import', entry.createdAt.getTime(), null, words, { resource, count }),
  ];
}

function webhookStep(d: TimelineDelivery & { latest: DeliveryState }): Step {
  const { latest } = d;
  const at = d.createdAt.getTime();
  const settled = latest.status !== 'pending';
  const words =
    latest.status === 'delivered'
      ? `Webhook ${d.type} delivered to endpoint ${d.endpointId.toHexString()} (${latest.attempts} attempt${latest.attempts === 1 ? '' : 's'}).`
      : latest.status === 'failed'
        ? `Webhook ${d.type} to endpoint ${d.endpointId.toHexString()} failed after ${latest.attempts} attempts.`
        : `Webhook ${d.type} to endpoint ${d.endpointId.toHexString()} pending (${latest.attempts} attempts so far).`;
  return step(`w:${d._id}`, 'webhook', at, settled ? Math.max(0, d.updatedAt.getTime() - at) : null, words, {
    endpoint_id: d.endpointId.toHexString(),
    event_type: d.type,
    status: latest.status,
    attempts: latest.attempts,
    last_http_status: latest.lastHttpStatus,
  });
}

function step(
  id: string,
  kind: StepKind,
  atMs: number,
  durationMs: number | null,
  detail: string,
  data: Record<string, unknown>,
): Step {
  return { id, step: kind, atMs, durationMs, detail, data };
}
