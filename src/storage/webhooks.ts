import { LRUCache } from 'lru-cache';
import { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { ImportEventDoc } from '../models/import-event.js';
import { deliveryId, type WebhookDelivery } from '../models/webhook-delivery.js';
import { batchedInsert, completeDocument } from './insert-batcher.js';
import { batchedDelete } from './group-commit.js';
import { indexLegacy, OutboxPages } from './webhook-outbox.js';
import { retryTransient } from './transient.js';
import {
  copySteps,
  insertStep,
  latestAmong,
  latestStep,
  recordedStateFields,
  sameStep,
  stateOfRecord,
  stepsOf,
  type DeliveryState,
  type RecordedState,
} from './webhook-steps.js';

export type { DeliveryState } from './webhook-steps.js';
export { stateOfRecord } from './webhook-steps.js';

/**
 * The repository of webhook endpoints, deliveries and the outbox side of import events.
 * FerretDB measures: deliveries and events are read and written by `_id`; the outbox sweep reads the outbox's
 * entries (`webhook_outbox`: only the events in flight), never the event collection, which FerretDB would read
 * whole; and it looks for overdue deliveries among their due entries (`webhook_due`), never the delivery
 * collection.
 */

export type EndpointRow = {
  _id: Types.ObjectId;
  organisationId: Types.ObjectId;
  url: string;
  events: string[];
  secret: string;
  removedAt: Date | null;
  /** When it was added (mongoose timestamps). */
  createdAt?: Date;
  /** When it starts receiving events; none (added before activation delays): when it was added. */
  activeFrom?: Date | null;
};

export type DeliveryRow = WebhookDelivery & { _id: string };
/** An event as a dispatch needs it. */
export type DispatchedEvent = Pick<
  ImportEventDoc,
  '_id' | 'eventId' | 'type' | 'organisationId' | 'occurredAt'
>;
/** What a delivery's attempts so far left: its record's state. */
export type MadeAttempt = Pick<DeliveryRow, 'status' | 'attempts' | 'lastHttpStatus' | 'nextAttemptAt'>;

/**
 * The endpoints an event goes to: live ones subscribed to its type when it was recorded. Whether an endpoint
 * added since gets it must not depend on how soon the event is dispatched (at once, or much later by the
 * outbox sweep), so one active only after the event's time does not.
 */
export function subscribedEndpoints(
  endpoints: readonly EndpointRow[],
  event: { type?: string | null; occurredAt: Date },
): EndpointRow[] {
  return endpoints.filter(
    (e) =>
      (e.events.length === 0 || (!!event.type && e.events.includes(event.type))) &&
      activeAt(e, event.occurredAt),
  );
}

/** When an endpoint starts receiving events (one added before activation delays: when it was added). */
export function activeFromOf(endpoint: Pick<EndpointRow, 'activeFrom' | 'createdAt'>): Date | null {
  return endpoint.activeFrom ?? endpoint.createdAt ?? null;
}

function activeAt(endpoint: EndpointRow, time: Date): boolean {
  const from = activeFromOf(endpoint);
  return !from || from <= time;
}

/** An organisation's live endpoints as read at `readAt` (the reader's time, taken before the read). */
type Remembered = { endpoints: EndpointRow[]; readAt: number };

export class WebhookStore {
  /** What event writers remember of organisations' endpoints, and for how long (see `rememberAudience`). */
  private audience: { known: LRUCache<string, Remembered>; forMs: number } | null = null;
  /** The outbox entries of the events this process writes undispatched, several to a page. */
  private readonly pages: OutboxPages;

  constructor(private readonly models: Models) {
    this.pages = new OutboxPages(models.WebhookOutbox);
  }

  /**
   * Lets `anySubscribed` remember an organisation's endpoints for half of `activationDelayMs` (the delay
   * `webhook add` gives a new endpoint before it receives events): set at boot by the API and the workers.
   * 0 (or never set): read for every event.
   */
  rememberAudience(activationDelayMs: number): void {
    const forMs = Math.floor(activationDelayMs / 2);
    this.audience = forMs > 0 ? { known: new LRUCache({ max: 10_000 }), forMs } : null;
  }

  async event(key: string): Promise<ImportEventDoc | null> {
    return retryTransient(() => this.models.ImportEvent.findById(key).lean<ImportEventDoc>().exec());
  }

  /**
   * The organisation's live endpoints, read at every dispatch (not remembered): an endpoint gets every event
   * recorded once it is active (the dispatch leaves out older ones), one removed none. The collection holds a
   * few documents per organisation, so the read costs little even where FerretDB reads it whole.
   */
  async liveEndpoints(organisationId: Types.ObjectId): Promise<EndpointRow[]> {
    return retryTransient(() =>
      this.models.WebhookEndpoint.find({ organisationId, removedAt: null }).lean<EndpointRow[]>().exec(),
    );
  }

  /**
   * Whether any endpoint of the organisation is subscribed to an event of `type` at `occurredAt`: asked by
   * the writer of an event before its insert (after taking its time), so an event nobody is subscribed to is
   * written already dispatched and costs the outbox nothing. The same read, with the same rule, as the
   * dispatch would make; an endpoint whose insert has not landed by then is missed by both alike.
   */
  async anySubscribed(organisationId: Types.ObjectId, type: string, occurredAt: Date): Promise<boolean> {
    const endpoints = await this.audienceAt(organisationId, occurredAt);
    return subscribedEndpoints(endpoints, { type, occurredAt }).length > 0;
  }

  /**
   * The organisation's live endpoints for an event at `occurredAt`: remembered from a read at most half the
   * activation delay before it. An endpoint missing from that read was added after it, so it is active only
   * a whole delay after (less the clocks' disagreement): not yet at `occurredAt`. An endpoint removed since is
   * still in it: its event gets a delivery all the same, which the delivery (reading its endpoint) fails
   * without sending anything, as it does for an endpoint removed after the dispatch.
   */
  async audienceAt(organisationId: Types.ObjectId, occurredAt: Date): Promise<EndpointRow[]> {
    const audience = this.audience;
    if (!audience) return this.liveEndpoints(organisationId);
    const key = organisationId.toHexString();
    const at = occurredAt.getTime();
    const remembered = audience.known.get(key);
    if (remembered && at >= remembered.readAt && at < remembered.readAt + audience.forMs)
      return remembered.endpoints;
    // Stamped with the event's time, taken before this read: never later than the read itself.
    const endpoints = await this.liveEndpoints(organisationId);
    audience.known.set(key, { endpoints, readAt: at });
    return endpoints;
  }

  /**
   * Adds an endpoint, active from `activationDelayMs` (the service's `WEBHOOK_ACTIVATION_DELAY_MS`) after it is
   * added by the database server's clock, whoever adds it: the event writers compare it with their own times
   * (`audienceAt`), so it is the clock they share, not the adding process's (an operator's machine), and the
   * one rule for every way an endpoint is added. Its `createdAt` is the same time.
   */
  async addEndpoint(
    fields: Pick<EndpointRow, 'organisationId' | 'url' | 'events' | 'secret'>,
    activationDelayMs: number,
  ): Promise<EndpointRow> {
    const model = this.models.WebhookEndpoint;
    const now = await this.serverTime();
    const doc = completeDocument(
      model,
      {
        _id: new Types.ObjectId(),
        ...fields,
        removedAt: null,
        activeFrom: new Date(now.getTime() + activationDelayMs),
      },
      now,
    ) as EndpointRow;
    await retryTransient(() => model.collection.insertOne(doc));
    return doc;
  }

  /** The database server's time (`hello`'s `localTime`, which MongoDB and FerretDB both give). */
  private async serverTime(): Promise<Date> {
    const hello = await this.models.WebhookEndpoint.db.db!.command({ hello: 1 });
    if (!(hello.localTime instanceof Date)) throw new Error('the database server did not give its time');
    return hello.localTime;
  }

  async endpoint(id: Types.ObjectId | string): Promise<EndpointRow | null> {
    return retryTransient(() => this.models.WebhookEndpoint.findById(id).lean<EndpointRow>().exec());
  }

  /**
   * One delivery per endpoint (those already there are kept as they are); returns their ids, and whether each
   * was inserted now. Inserted pending with no attempt yet, due now, unless `made[i]` gives what the attempt
   * already made to endpoint `i` left (a first attempt made before the insert: `DirectDeliveries`).
   */
  async createDeliveries(
    event: Pick<ImportEventDoc, '_id' | 'eventId' | 'type' | 'organisationId'>,
    endpoints: readonly EndpointRow[],
    now: Date,
    made: readonly (MadeAttempt | null)[] = [],
  ): Promise<{ id: string; endpointId: string; inserted: boolean }[]> {
    const model = this.models.WebhookDelivery;
    const docs = endpoints.map((endpoint, i) =>
      completeDocument(
        model,
        {
          _id: deliveryId(event.eventId, endpoint._id.toHexString()),
          eventId: event.eventId,
          eventKey: event._id,
          type: event.type!,
          endpointId: endpoint._id,
          organisationId: event.organisationId,
          ...(made[i] ?? { status: 'pending', attempts: 0, lastHttpStatus: null, nextAttemptAt: now }),
          replays: 0,
        },
        now,
      ),
    );
    // A delivery written pending has its due entry first, so the sweep can always find it.
    const due = docs
      .filter((d) => d.status === 'pending')
      .map((d) => ({ _id: d._id, dueAt: d.nextAttemptAt! }));
    if (due.length > 0) await retryTransient(() => batchedInsert(this.models.WebhookDue, due));
    const outcomes = await retryTransient(() => batchedInsert(model, docs));
    return docs.map((d, i) => ({
      id: d._id,
      endpointId: d.endpointId.toHexString(),
      inserted: outcomes[i] === 'inserted',
    }));
  }

  /**
   * An event about to be written undispatched is put on an outbox page first (`webhook-outbox.ts`), so a writer
   * dying between the two leaves a page the sweep deals with, never an event it cannot find. A writer whose
   * insert finds the event already there hands it over (`handOver`); one that lost a history position to another
   * writer leaves its page (`lostInsert`). Nothing for an event written dispatched.
   */
  async expectDispatch(event: { _id: string; dispatched: boolean; occurredAt: Date }): Promise<void> {
    if (event.dispatched) return;
    await retryTransient(() => this.pages.cover(event._id, event.occurredAt));
  }

  /**
   * The event's dispatch leaves this process (a dispatch job, or the writer that inserted it first): it gets an
   * outbox entry of its own, which that dispatch deletes, before it leaves this process's page. Never fails.
   */
  async handOver(event: { _id: string; occurredAt: Date }): Promise<void> {
    await this.pages.handOver(event._id, event.occurredAt);
  }

  /**
   * The writer lost the event's insert to another writer, whose event it is: it leaves this writer's page.
   * Never fails (a page left behind is expanded by the sweep, and dispatches the winner's event once more).
   */
  async lostInsert(key: string): Promise<void> {
    await this.pages.release(key).catch(() => undefined);
  }

  /**
   * The event is dispatched: it leaves its page, or its own outbox entry goes (the event itself is not written
   * again: on FerretDB an update rewrites the whole event). Dispatching it again would add nothing, so a crash
   * just before this costs one more dispatch, found by the sweep. Sent with other dispatches' deletes in one
   * command.
   */
  async markDispatched(key: string): Promise<void> {
    if (await this.pages.release(key)) return;
    await retryTransient(() => batchedDelete(this.models.WebhookOutbox, key));
  }

  /** Whether an event written undispatched is still waiting for its dispatch (an entry or a page holds it). */
  async undispatched(key: string): Promise<boolean> {
    const found = await retryTransient(() =>
      this.models.WebhookOutbox.exists({ $or: [{ _id: key }, { keys: key }] }).exec(),
    );
    return found !== null;
  }

  /**
   * Forgets the outbox entry of an event that was never written (its writer failed or died between the entry
   * and the event), once it is older than `cutoff`: until then the event's insert may still be on its way.
   */
  async forgetUnwritten(key: string, cutoff: Date): Promise<void> {
    await retryTransient(() =>
      this.models.WebhookOutbox.deleteOne({ _id: key, occurredAt: { $lt: cutoff } }).exec(),
    );
  }

  async delivery(id: string): Promise<DeliveryRow | null> {
    return retryTransient(() => this.models.WebhookDelivery.findById(id).lean<DeliveryRow>().exec());
  }

  /** The delivery's latest state, read on from `from` (see `webhook-steps.ts`). */
  async latest(id: string, from: DeliveryState): Promise<DeliveryState> {
    return latestStep(this.models, id, from);
  }

  /**
   * Records the step that follows `after` (what the run read right before its attempt): `next`, the attempt's
   * outcome, unless another run of the delivery's job recorded that step first. Returns whether this one did,
   * and the delivery's latest state (another run's outcome, when this one lost). Keeps the due entry in step:
   * moved to the next attempt before a pending step is written, deleted once the delivery is settled (a crash
   * in between leaves an entry the sweep finds settled, and deletes).
   */
  async recordStep(
    delivery: { id: string; organisationId: Types.ObjectId },
    after: DeliveryState,
    next: MadeAttempt,
  ): Promise<{ recorded: boolean; latest: DeliveryState }> {
    if (next.status === 'pending' && next.nextAttemptAt) await this.due(delivery.id, next.nextAttemptAt);
    const step = { ...next, series: after.series, step: after.step + 1 } as DeliveryState;
    const made = await insertStep(this.models, delivery, step, new Date());
    const latest = await copySteps(
      this.models,
      delivery.id,
      made ?? (await latestStep(this.models, delivery.id, after)),
    );
    if (latest.status !== 'pending') await this.settled(delivery.id);
    return { recorded: made !== null, latest };
  }

  /**
   * Starts the next series of a settled delivery (`latest`: its latest state): pending again, no attempt yet,
   * due now. Two replays at once start one series (the second finds its step written). Returns the series.
   */
  async replay(
    delivery: { id: string; organisationId: Types.ObjectId },
    latest: DeliveryState,
    now: Date,
  ): Promise<number> {
    const start: DeliveryState = {
      status: 'pending',
      attempts: 0,
      lastHttpStatus: latest.lastHttpStatus,
      nextAttemptAt: now,
      series: latest.series + 1,
      step: 0,
    };
    // Written pending: its due entry first, so the sweep's look for lost jobs can always find it.
    await this.due(delivery.id, now);
    const made = await insertStep(this.models, delivery, start, now);
    await copySteps(this.models, delivery.id, made ?? (await latestStep(this.models, delivery.id, latest)));
    return start.series;
  }

  /** An organisation's deliveries, oldest first, each with its latest state. */
  async deliveriesOf(organisationId: Types.ObjectId): Promise<(DeliveryRow & { latest: DeliveryState })[]> {
    const [rows, steps] = await Promise.all([
      retryTransient(() =>
        this.models.WebhookDelivery.find({ organisationId })
          .sort({ createdAt: 1 })
          .lean<DeliveryRow[]>()
          .exec(),
      ),
      stepsOf(this.models, organisationId),
    ]);
    return rows.map((r) => ({ ...r, latest: latestAmong(steps, r._id, stateOfRecord(r)) }));
  }

  /** A delivery's next attempt is due at `at` (its entry written or moved: before it is written pending). */
  async due(id: string, at: Date): Promise<void> {
    await retryTransient(() =>
      this.models.WebhookDue.updateOne({ _id: id }, { $set: { dueAt: at } }, { upsert: true }).exec(),
    );
  }

  /** A delivery is delivered or failed: it has no attempt due. */
  private async settled(id: string): Promise<void> {
    await retryTransient(() => this.models.WebhookDue.deleteOne({ _id: id }).exec());
  }

  /**
   * Events recorded at least `olderThanMs` ago and not dispatched yet: the relay's misses (a crash between the
   * write and the dispatch, Redis down). Read from the outbox, which holds only the events in flight. A page
   * among them is expanded: its events get entries of their own (so their dispatches delete them), then it goes.
   */
  async undispatchedEvents(olderThanMs: number, limit: number, now: Date) {
    const found = await retryTransient(() =>
      this.models.WebhookOutbox.find({ occurredAt: { $lt: new Date(now.getTime() - olderThanMs) } })
        .limit(limit)
        .lean<{ _id: string; occurredAt: Date; keys?: string[] }[]>()
        .exec(),
    );
    return this.pages.expand(found);
  }

  /**
   * Once per database: gives an outbox entry to every event written undispatched, and a due entry to every
   * delivery written pending, by a version before the entries (`indexLegacy` in `webhook-outbox.ts`).
   */
  async indexLegacy(now: Date): Promise<number> {
    return indexLegacy(this.models, now);
  }

  /**
   * Deliveries still pending at least `olderThanMs` after they were due: normally a job is on them (queued
   * behind others, delayed for a busy endpoint, running), but a Redis failover may have lost it. The sweep
   * looks at each one's job. Found among the due entries past that time (each delivery read by `_id`); an
   * entry whose delivery is settled (or gone) is deleted on the way, one behind its delivery moved.
   */
  async overdueDeliveries(olderThanMs: number, limit: number, now: Date) {
    const cutoff = new Date(now.getTime() - olderThanMs);
    const entries = await retryTransient(() =>
      this.models.WebhookDue.find({ dueAt: { $lt: cutoff } })
        .limit(limit)
        .lean<{ _id: string }[]>()
        .exec(),
    );
    const found = await Promise.all(
      entries.map(async ({ _id }) => {
        const record = await retryTransient(() =>
          this.models.WebhookDelivery.findById(_id, recordedStateFields).lean<RecordedState>().exec(),
        );
        // Its latest step, not only its record's copy (behind when a run died between the two: copied now).
        const copy = record && stateOfRecord(record);
        const delivery = copy && (await this.latest(_id, copy));
        if (copy && delivery && !sameStep(delivery, copy)) await copySteps(this.models, _id, delivery);
        if (delivery?.status !== 'pending') {
          await this.settled(_id);
          return null;
        }
        if (!delivery.nextAttemptAt) return null;
        if (delivery.nextAttemptAt < cutoff) return { _id, replays: delivery.series };
        // Due later than its entry said (a crash between the entry's move and the delivery's update): the
        // entry is moved, so it is not read again before then.
        await this.due(_id, delivery.nextAttemptAt);
        return null;
      }),
    );
    return found.filter((d): d is { _id: string; replays: number } => d !== null);
  }
}

const stores = new WeakMap<Models, WebhookStore>();

export function webhookStore(models: Models): WebhookStore {
  let store = stores.get(models);
  if (!store) {
    store = new WebhookStore(models);
    stores.set(models, store);
  }
  return store;
}
