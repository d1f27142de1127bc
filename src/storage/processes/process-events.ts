import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import {
  emptyState,
  foldEvent,
  stateAtSchedule,
  VOID_EVENT,
  webhookTypeOf,
  type NewEvent,
  type ProcessEvent,
  type ProcessState,
  type WebhookEventType,
} from '../../domain/import-process/state.js';
import type { Models } from '../models/index.js';
import { postImportEventId, processEventId } from '../models/import-event.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import type { ProgressCounters } from '../progress/progress-counters.js';
import { entryOf, type PendingChange } from '../progress/progress-entry.js';
import { retryTransient } from '../write-path/transient.js';
import type { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import {
  newEventId,
  processEventFields,
  recordedOf,
  toEvent,
  webhookBody,
  type EntryFields,
  type ProcessIdentity,
  type RecordedEvent,
} from './process-event-records.js';

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

const MAX_ATTEMPTS = 25;

export class ProcessEventLog {
  private readonly heads = new LRUCache<string, ProcessState>({ max: 200_000 });

  /**
   * `progress`: the cohort counters the changes keep up to date (none: left to a rebuild). `audience`: asked
   * before an event with a webhook type is inserted; an event nobody is subscribed to is written dispatched,
   * so it costs the outbox neither a job nor a later update (none: every such event goes through the relay).
   * `outbox`: where the events written undispatched are entered (the storage's one outbox: its pages are
   * shared by every writer of the process).
   */
  constructor(
    private readonly model: Models['ImportEvent'],
    private readonly progress: ProgressCounters | null,
    private readonly audience: Audience | null,
    private readonly outbox: WebhookOutbox,
  ) {}

  /**
   * The process's current state (`emptyState` when it has no history). `from`: a state of the process the
   * caller knows, folded up to its `seq` (entries never change, so it stays exact): the history is read on
   * from there, or from the head this log remembers if that is further on.
   */
  async state(key: string, from?: ProcessState): Promise<ProcessState> {
    const cached = this.heads.get(key);
    let state = from && from.seq > (cached?.seq ?? -1) ? from : (cached ?? emptyState);
    for (;;) {
      const seq = state.seq + 1;
      const entry = await this.entry(key, seq);
      if (!entry) break;
      state = foldEvent(state, seq, toEvent(seq, entry));
    }
    if (state.seq >= 0) this.heads.set(key, state);
    return state;
  }

  /**
   * The current state of a process as its scheduled task `taskId` first reads it, when the history before
   * the task was fresh (`isFresh`, as the task's schedule saw it): read from the task's own entry on when that
   * is a SCHEDULED, without the entries before it. Null when the entry is anything else (a VOID, a cancel)
   * or not there: then the whole history is the caller's to read. `assumeLatest`: the state at the entry is
   * returned (and remembered as the head) without looking past it: an assumption, which only the insert of
   * the next entry proves (it fails when something came after); no decision to write nothing may rest on it.
   */
  async stateFromTask(key: string, taskId: number, assumeLatest = false): Promise<ProcessState | null> {
    // A head remembered at or past the entry is the cheaper start, and needs no promise about the history.
    if ((this.heads.get(key)?.seq ?? -1) >= taskId) return this.state(key);
    // The schedule queues the task's job just before it writes this entry, so a task due at once often looks
    // before the write has landed: one more look, a round trip later, usually finds it.
    const entry = (await this.entry(key, taskId)) ?? (await this.entry(key, taskId));
    const at = entry && stateAtSchedule(toEvent(taskId, entry));
    if (at && assumeLatest) this.heads.set(key, at);
    return at && !assumeLatest ? this.state(key, at) : at;
  }

  /** The entry at a position of the history, as the fold needs it; null when the position is free. */
  private entry(key: string, seq: number): Promise<EntryFields | null> {
    return retryTransient(() =>
      this.model
        .findById(processEventId(key, seq), { event: 1, data: 1, run: 1, occurredAt: 1 })
        .lean<EntryFields>()
        .exec(),
    );
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
      const doc = completeDocument(this.model, processEventFields(process, seq, event, now, subscribed), now);
      const [pending] = await Promise.all([
        this.intend(process, { kind: 'event', ext: process.externalAccountNumber, seq, writer: doc.writer }),
        this.outbox.expectDispatch(doc),
      ]);
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
      // The position is another writer's, and so is the event there (on its writer's page or entry): this
      // writer's cover goes.
      await this.outbox.lostInsert(doc._id);
      if (pending) await this.progress?.forget(process.importSupplier, pending);
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
    const change = { id: doc._id, resource: input.resource, count: input.count, writer: doc.writer };
    const [pending] = await Promise.all([
      counted ? this.intend(process, { kind: 'post', ...change }) : null,
      this.outbox.expectDispatch(doc),
    ]);
    const [outcome] = await retryTransient(() => batchedInsert(this.model, [doc]));
    const progress = this.progress;
    const countIt = () =>
      pending && progress?.post(process.importSupplier, doc._id, change.resource, change.count, pending);
    if (outcome === 'inserted') {
      await countIt();
      return recordedOf(doc, subscribed);
    }
    const there = await this.model
      .findById(doc._id, { eventId: 1, dispatched: 1, writer: 1 })
      .lean<RecordedEvent & { writer: string }>()
      .exec();
    // This writer's own insert, whose answer was lost: it is counted (once, by its pending member) as inserted.
    if (there?.writer === doc.writer) {
      await countIt();
      return recordedOf(doc, subscribed);
    }
    // Written before by another request (the same write sent again): counted by its own writer, not here.
    if (pending) await progress?.forget(process.importSupplier, pending);
    // Whoever dispatches it deletes its entry.
    if (!doc.dispatched) await this.outbox.handOver(doc);
    return there ?? doc;
  }

  /**
   * Notes a change in the counters' pending set before it is written (a crash between the write and its
   * count leaves it there for the repair). With Redis unavailable the change is written all the same: the
   * counters log and count the failure and have the supplier's counts rebuilt from the database.
   */
  private async intend(process: ProcessIdentity, change: PendingChange): Promise<string | null> {
    return (await this.progress?.intend(process.importSupplier, change)) ?? null;
  }

  /** Applies the process's state after a change to the counters (idempotent by the change's position). */
  private async count(process: ProcessIdentity, state: ProcessState, pending: string | null): Promise<void> {
    const entry = entryOf(state);
    if (!entry) return;
    await this.progress?.apply(process.importSupplier, process.externalAccountNumber, entry, pending);
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
}
