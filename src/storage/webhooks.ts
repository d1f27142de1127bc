import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { ImportEventDoc } from '../models/import-event.js';
import { deliveryId, type WebhookDelivery } from '../models/webhook-delivery.js';
import { batchedInsert, completeDocument } from './insert-batcher.js';
import { batchedDelete } from './group-commit.js';
import { indexLegacy, OutboxPages } from './webhook-outbox.js';
import { retryTransient } from './transient.js';

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

  /**
   * Records an attempt's outcome (one job works on a delivery at a time, so a plain update is enough), and
   * keeps the delivery's due entry in step: moved to its next attempt before the update, deleted after it once
   * the delivery is settled (a crash in between leaves an entry the sweep finds settled, and deletes).
   */
  async recordAttempt(
    id: string,
    change: Partial<
      Pick<DeliveryRow, 'status' | 'attempts' | 'lastHttpStatus' | 'nextAttemptAt' | 'replays'>
    >,
  ): Promise<void> {
    if (change.status === 'pending' && change.nextAttemptAt) await this.due(id, change.nextAttemptAt);
    await retryTransient(() => this.models.WebhookDelivery.updateOne({ _id: id }, { $set: change }).exec());
    if (change.status === 'delivered' || change.status === 'failed') await this.settled(id);
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
        const delivery = await retryTransient(() =>
          this.models.WebhookDelivery.findById(_id, { status: 1, nextAttemptAt: 1, replays: 1 })
            .lean<Pick<DeliveryRow, '_id' | 'status' | 'nextAttemptAt' | 'replays'>>()
            .exec(),
        );
        if (delivery?.status !== 'pending') {
          await this.settled(_id);
          return null;
        }
        if (!delivery.nextAttemptAt) return null;
        if (delivery.nextAttemptAt < cutoff) return { _id, replays: delivery.replays ?? 0 };
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
