import { isValidObjectId, Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * Organisations' webhook endpoints. The collection holds a few documents per organisation, so a read of an
 * organisation's endpoints costs little even where FerretDB reads it whole.
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

export class WebhookEndpoints {
  constructor(private readonly models: Models) {}

  /**
   * The organisation's live endpoints, read at every dispatch (not remembered): an endpoint gets every event
   * recorded once it is active (the dispatch leaves out older ones), one removed none.
   */
  async live(organisationId: Types.ObjectId): Promise<EndpointRow[]> {
    return retryTransient(() =>
      this.models.WebhookEndpoint.find({ organisationId, removedAt: null }).lean<EndpointRow[]>().exec(),
    );
  }

  /** The same, oldest first (an operator's listing). */
  async listed(organisationId: Types.ObjectId): Promise<EndpointRow[]> {
    return this.models.WebhookEndpoint.find({ organisationId, removedAt: null })
      .sort({ createdAt: 1 })
      .lean<EndpointRow[]>()
      .exec();
  }

  async find(id: Types.ObjectId | string): Promise<EndpointRow | null> {
    return retryTransient(() => this.models.WebhookEndpoint.findById(id).lean<EndpointRow>().exec());
  }

  /**
   * Adds an endpoint, active from `activationDelayMs` (the service's `WEBHOOK_ACTIVATION_DELAY_MS`) after it is
   * added by the database server's clock, whoever adds it: the event writers compare it with their own times
   * (`WebhookAudience`), so it is the clock they share, not the adding process's (an operator's machine), and
   * the one rule for every way an endpoint is added. Its `createdAt` is the same time.
   */
  async add(
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

  /**
   * Removes one of the organisation's live endpoints; false when it has none of that id (an id of another
   * organisation's endpoint is one that does not exist).
   */
  async remove(organisationId: Types.ObjectId, id: string): Promise<boolean> {
    if (!isValidObjectId(id)) return false;
    const doc = await this.models.WebhookEndpoint.findOneAndUpdate(
      { _id: id, organisationId, removedAt: null },
      { $set: { removedAt: new Date() } },
      { returnDocument: 'after' },
    );
    return doc !== null;
  }

  /** The id of the organisation an operator names (`import-admin webhook ... --org`); null when there is none. */
  async organisationId(name: string): Promise<Types.ObjectId | null> {
    const org = await this.models.Organisation.findOne({ name }).select({ _id: 1 }).lean();
    return org?._id ?? null;
  }

  /** The database server's time (`hello`'s `localTime`, which MongoDB and FerretDB both give). */
  private async serverTime(): Promise<Date> {
    const hello = await this.models.WebhookEndpoint.db.db!.command({ hello: 1 });
    if (!(hello.localTime instanceof Date)) throw new Error('the database server did not give its time');
    return hello.localTime;
  }
}
