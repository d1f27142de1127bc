import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import {
  emptyState,
  eventName,
  foldEvent,
  VOID_EVENT,
  webhookTypeOf,
  type NewEvent,
  type ProcessEvent,
  type ProcessEventKind,
  type ProcessState,
  type WebhookEventType,
} from '../domain/import-process/state.js';
import { formatUtcDatetime } from '../schemas/primitives.js';
import type { Models } from '../models/index.js';
import { postImportEventId, processEventId, type ImportEventDoc } from '../models/import-event.js';
import { batchedInsert, completeDocument } from './insert-batcher.js';
import { entryOf, type PendingChange, type ProgressCounters } from './progress-counters.js';
import { retryTransient } from './transient.js';

/**
 * The repository of import events (`models/import-event.ts`): each process's append-only history, which is
 * its v2 state, and the outbox of the webhooks that report it.
 *
 * Like the ledger journal, a change is decided against the head it read and written as the insert of the
 * next position; the loser of a race (duplicate `_id`) reads the head again and decides again. So a cancel
 * and a task's start cannot both win, and two runs cannot both record an outcome over the same state.
 * FerretDB measures kept here: entries are read by exact `_id` only (the head found by probing the next
 * position from the last one seen, remembered per process), and inserts go through the group commit.
 */

export type ProcessIdentity = {
  key: string;
  organisationId: Types.ObjectId;
  importSupplier: string;
  externalAccountNumber: string;
};

/** What a caller hands to the webhook relay: the event's `_id` (the queue job is keyed by its `eventId`). */
/**
 * An event as its writer knows it. Its organisation, webhook type and time are there when this writer inserted it
 * (not when it found the event already there).
 */
export type RecordedEvent = {
  _id: string;
  eventId: string;
  dispatched: boolean;
  organisationId?: Types.ObjectId;
  type?: string | null;
  occurredAt?: Date;
  /** Its writer read the organisation's endpoints before writing it and found one subscribed. */
  subscribed?: boolean;
};

/**
 * Whether any endpoint of an organisation is subscribed to an event of `type` at `occurredAt` (the webhook
 * store's `anySubscribed`); it may throw, and then the event is written undispatched for the relay to decide.
 */
export type Audience = (organisationId: Types.ObjectId, type: string, occurredAt: Date) => Promise<boolean>;

export type ProcessDecision<T> = { event: NewEvent | null; result: T };

export class ProcessEventContention extends Error {
  constructor(key: string) {
    super(`the import events of ${key} kept changing under their writer`);
  }
}

type EntryFields = Pick<ImportEventDoc, '_id' | 'event' | 'data' | 'run' | 'occurredAt' | 'writer'>;

const MAX_ATTEMPTS = 25;

export class ProcessEventLog {
  private readonly heads = new LRUCache<string, ProcessState>({ max: 200_000 });

  /**
   * `progress`: the cohort counters the changes keep up to date (none: left to a rebuild). `audience`: asked
   * before an event with a webhook type is inserted; an event nobody is subscribed to is written dispatched,
   * so it costs the outbox neither a job nor a later update (none: every such event goes through the relay).
   */
  constructor(
    private readonly model: Models['ImportEvent'],
    private readonly progress: () => ProgressCounters | null = () => null,
    private readonly audience: Audience | null = null,
  ) {}

  /** The process's current state (`emptyState` when it has no history). */
  async state(key: string): Promise<ProcessState> {
    let state = this.heads.get(key) ?? emptyState;
    for (;;) {
      const seq = state.seq + 1;
      const entry = await retryTransient(() =>
        this.model
          .findById(processEventId(key, seq), { event: 1, data: 1, run: 1, occurredAt: 1 })
          .lean<EntryFields>()
          .exec(),
      );
      if (!entry) break;
      state = foldEvent(state, seq, toEvent(seq, entry));
    }
    if (state.seq >= 0) this.heads.set(key, state);
    return state;
  }

  /** The whole history, oldest first (VOID entries left out). */
  async history(key: string): Promise<ProcessEvent[]> {
    const events: ProcessEvent[] = [];
    for (let seq = 0; ; seq++) {
      const entry = await this.model.findById(processEventId(key, seq)).lean<EntryFields>().exec();
      if (!entry) break;
      const event = toEvent(seq, entry);
      if (event) events.push(event);
    }
    return events;
  }

  /**
   * Decides and appends one event. `decide` sees the current state and returns the event to append (or
   * none) and the answer to give; when another writer appended first, it is called again with the new state.
   * Returns the answer, the recorded event (for the webhook relay) and the state after it.
   */
  async append<T>(
    process: ProcessIdentity,
    decide: (state: ProcessState) => ProcessDecision<T> | Promise<ProcessDecision<T>>,
    now: Date,
    options: { assume?: ProcessState } = {},
  ): Promise<{ result: T; recorded: RecordedEvent | null; state: ProcessState }> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      // Optimistic first try: the head this process last saw (or the one the caller knows, e.g. the empty
      // history of a process about to be created) without reading. A stale head cannot do harm: the position after it is taken, so the
      // insert fails and the loop reads the head before deciding again. Saves a read per event.
      const known = attempt === 0 ? (this.heads.get(process.key) ?? options.assume ?? null) : null;
      const state = known ?? (await this.state(process.key));
      const { event, result } = await decide(state);
      // A decision to write nothing (a refusal) has no insert to catch a stale head: one made on a cached head
      // is made again on the head read now (another pod may have appended since this one cached it).
      if (!event && known) continue;
      if (!event) return { result, recorded: null, state };
      const seq = state.seq + 1;
      const subscribed = await this.subscribed(process.organisationId, webhookTypeOf[event.kind], now);
      const doc = this.processEventDocument(process, seq, event, now, subscribed);
      const pending = await this.intend(process, {
        kind: 'event',
        ext: process.externalAccountNumber,
        seq,
        writer: doc.writer,
      });
      const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
      const after = () => foldEvent(state, seq, toEvent(seq, doc));
      if (outcome === 'inserted') {
        this.heads.set(process.key, after());
        await this.count(process, after(), pending);
        return { result, recorded: recordedOf(doc, subscribed), state: after() };
      }
      const there = await this.model.findById(doc._id, { writer: 1 }).lean<{ writer: string }>().exec();
      if (there?.writer === doc.writer) {
        this.heads.delete(process.key);
        await this.count(process, after(), pending);
        return { result, recorded: recordedOf(doc, subscribed), state: after() };
      }
      if (pending)
        await this.progress()
          ?.forget(process.importSupplier, pending)
          .catch(() => undefined);
    }
    throw new ProcessEventContention(process.key);
  }

  /**
   * Fills position `seq` with a VOID entry unless something is there already: a writer that claimed the
   * position (e.g. a schedule that queued its task first) and never wrote it. A writer still on its way then
   * loses the insert and decides again at the next position. Returns whether the position was voided.
   */
  async voidPosition(process: ProcessIdentity, seq: number, now: Date): Promise<boolean> {
    const doc = completeDocument(
      this.model,
      {
        _id: processEventId(process.key, seq),
        eventId: newEventId(),
        organisationId: process.organisationId,
        importSupplier: process.importSupplier,
        externalAccountNumber: process.externalAccountNumber,
        seq,
        event: VOID_EVENT,
        type: null,
        data: '{}',
        run: null,
        body: null,
        dispatched: true,
        writer: randomUUID(),
        occurredAt: now,
      },
      now,
    );
    const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
    if (outcome === 'inserted') this.heads.delete(process.key);
    return outcome === 'inserted';
  }

  /**
   * Records a post-import event (`ref` identifies the write it reports, so recording it twice is a no-op).
   * Returns the event for the relay.
   */
  async recordPostImport(
    process: ProcessIdentity & { krakenAccountNumber: string },
    input: {
      type: Extract<WebhookEventType, `${string}post_import${string}`>;
      resource: string;
      ref: string;
      count: number;
      error?: { code: string; detail: string; domain: string };
    },
    now: Date,
  ): Promise<RecordedEvent> {
    const eventId = newEventId();
    const data = {
      import_supplier: process.importSupplier,
      external_account_number: process.externalAccountNumber,
      kraken_account_number: process.krakenAccountNumber,
      resource: input.resource,
      count: input.count,
      ...(input.error ? { error: input.error } : {}),
    };
    const subscribed = await this.subscribed(process.organisationId, input.type, now);
    const doc = completeDocument(
      this.model,
      {
        _id: postImportEventId(process.key, input.resource, input.ref),
        eventId,
        organisationId: process.organisationId,
        importSupplier: process.importSupplier,
        externalAccountNumber: process.externalAccountNumber,
        seq: null,
        event: null,
        type: input.type,
        data: JSON.stringify(data),
        run: null,
        body: webhookBody(eventId, input.type, now, data),
        dispatched: subscribed === false,
        writer: randomUUID(),
        occurredAt: now,
      },
      now,
    );
    const counted = input.type === 'data_import.import_process.post_import.completed-v1';
    const pending = counted
      ? await this.intend(process, {
          kind: 'post',
          id: doc._id,
          resource: input.resource,
          count: input.count,
        })
      : null;
    const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
    if (pending) {
      await this.progress()
        ?.post(process.importSupplier, doc._id, input.resource, input.count, pending)
        .catch(() => undefined);
    }
    if (outcome === 'inserted') return recordedOf(doc, subscribed);
    const there = await this.model
      .findById(doc._id, { eventId: 1, dispatched: 1 })
      .lean<RecordedEvent>()
      .exec();
    return there ?? doc;
  }

  /**
   * Notes a change in the counters' pending set before it is written (a crash between the write and its
   * count leaves it there for the repair). Best effort: with Redis unavailable the change is written all the
   * same, and the counts wait for the next change of the process or a rebuild.
   */
  private async intend(process: ProcessIdentity, change: PendingChange): Promise<string | null> {
    const progress = this.progress();
    if (!progress) return null;
    return progress.intend(process.importSupplier, change).catch(() => null);
  }

  /** Applies the process's state after a change to the counters (idempotent by the change's position). */
  private async count(process: ProcessIdentity, state: ProcessState, pending: string | null): Promise<void> {
    const progress = this.progress();
    const entry = entryOf(state);
    if (!progress || !entry) return;
    await progress
      .apply(process.importSupplier, process.externalAccountNumber, entry, pending ? { pending } : {})
      .catch(() => undefined);
  }

  /**
   * Whether anyone is subscribed to an event of `type` recorded at `now`: false (written dispatched) only
   * when the audience said so; null when there is nothing to ask (no type) or nobody to ask it of, or the
   * read failed (written undispatched: the relay, or the outbox sweep, decides).
   */
  private async subscribed(organisationId: Types.ObjectId, type: string | null, now: Date) {
    if (!type || !this.audience) return null;
    return this.audience(organisationId, type, now).catch(() => null);
  }

  private processEventDocument(
    process: ProcessIdentity,
    seq: number,
    event: NewEvent,
    now: Date,
    subscribed: boolean | null,
  ) {
    const eventId = newEventId();
    const type = webhookTypeOf[event.kind];
    return completeDocument(
      this.model,
      {
        _id: processEventId(process.key, seq),
        eventId,
        organisationId: process.organisationId,
        importSupplier: process.importSupplier,
        externalAccountNumber: process.externalAccountNumber,
        seq,
        event: event.kind,
        type,
        data: JSON.stringify(event.data),
        run: event.run ?? null,
        body: type ? webhookBody(eventId, type, now, webhookData(process, event)) : null,
        dispatched: type === null || subscribed === false,
        writer: randomUUID(),
        occurredAt: now,
      },
      now,
    );
  }
}

function recordedOf<D extends RecordedEvent>(doc: D, subscribed: boolean | null): RecordedEvent {
  return subscribed ? { ...doc, subscribed: true } : doc;
}

export const newEventId = () => `evt_${randomUUID().replaceAll('-', '')}`;

/** The webhook's `data`: who the event is about, and the error of a failure. Never personal data. */
function webhookData(process: ProcessIdentity, event: NewEvent): Record<string, unknown> {
  const error = event.data.error as Record<string, unknown> | undefined;
  return {
    import_supplier: process.importSupplier,
    external_account_number: process.externalAccountNumber,
    kraken_account_number: (event.data.kraken_account_number as string | undefined) ?? null,
    ...(error ? { error } : {}),
  };
}

function webhookBody(eventId: string, type: string, at: Date, data: Record<string, unknown>): string {
  return JSON.stringify({ id: eventId, type, occurred_at: formatUtcDatetime(at), data });
}

function toEvent(seq: number, entry: Pick<EntryFields, 'event' | 'data' | 'run' | 'occurredAt'>) {
  if (!entry.event || entry.event === VOID_EVENT) return null;
  return {
    seq,
    kind: entry.event as ProcessEventKind,
    occurredAt: entry.occurredAt,
    data: JSON.parse(entry.data) as Record<string, unknown>,
    run: entry.run ?? null,
  } satisfies ProcessEvent;
}

/** The status body's `latest_event`, and an item of the history. */
export function describeEvent(event: ProcessEvent) {
  // Internal: the team's id (the request named it) and the hash of the payload a task creates from.
  const { operations_team_id: _team, payload_hash: _hash, ...data } = event.data;
  return { event: eventName(event.kind), occurred_at: formatUtcDatetime(event.occurredAt), data };
}
