import type { Models } from '../models/index.js';
import type { ImportEventDoc } from '../models/import-event.js';
import { LEGACY_SCAN_ID, NEVER } from '../models/webhook-outbox.js';
import { batchedDelete } from '../write-path/group-commit.js';
import { batchedInsert } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';
import { OutboxPages } from './outbox-pages.js';

/**
 * The outbox side of import events: which events written undispatched still wait for their dispatch. The
 * outbox sweep reads the outbox's entries (`webhook_outbox`: only the events in flight), never the event
 * collection, which FerretDB would read whole; events are read by `_id`.
 */

/** An event as a dispatch needs it. */
export type DispatchedEvent = Pick<
  ImportEventDoc,
  '_id' | 'eventId' | 'type' | 'organisationId' | 'occurredAt'
>;

export class WebhookOutbox {
  /** The outbox entries of the events this process writes undispatched, several to a page. */
  private readonly pages: OutboxPages;

  constructor(private readonly models: Models) {
    this.pages = new OutboxPages(models.WebhookOutbox);
  }

  /** An event as its dispatch reads it (its body included). */
  async event(key: string): Promise<ImportEventDoc | null> {
    return retryTransient(() => this.models.ImportEvent.findById(key).lean<ImportEventDoc>().exec());
  }

  /**
   * An event about to be written undispatched is put on an outbox page first (`outbox-pages.ts`), so a writer
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
    // silent-ok: a page left behind is the sweep's, as said above.
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
   * delivery written pending, by a version before the entries (`indexLegacy` below).
   */
  async indexLegacy(now: Date): Promise<number> {
    return indexLegacy(this.models, now);
  }
}

/**
 * Once per database: gives an entry to every event written undispatched, and every delivery written pending,
 * before the entries existed (by an earlier version), so the sweep, which reads only the entries, still finds
 * them. Reads the event and delivery collections once, then never again (the outbox entry `LEGACY_SCAN_ID`
 * says it is done). An event dispatched since it was written gets an entry too, and is dispatched again for
 * nothing: harmless, and few (those of the minutes around the upgrade). Returns how many entries it wrote.
 */
export async function indexLegacy(models: Models, now: Date): Promise<number> {
  const outbox = models.WebhookOutbox;
  if (await retryTransient(() => outbox.exists({ _id: LEGACY_SCAN_ID }).exec())) return 0;
  const [events, deliveries] = await Promise.all([
    retryTransient(() =>
      models.ImportEvent.find({ dispatched: false })
        .select({ _id: 1, occurredAt: 1 })
        .lean<{ _id: string; occurredAt: Date }[]>()
        .exec(),
    ),
    retryTransient(() =>
      models.WebhookDelivery.find({ status: 'pending' })
        .select({ _id: 1, nextAttemptAt: 1 })
        .lean<{ _id: string; nextAttemptAt: Date | null }[]>()
        .exec(),
    ),
  ]);
  const entries = events.map((e) => ({ _id: e._id, occurredAt: e.occurredAt }));
  const due = deliveries.map((d) => ({ _id: d._id, dueAt: d.nextAttemptAt ?? now }));
  const outcomes = await Promise.all([
    retryTransient(() => batchedInsert(outbox, entries)),
    retryTransient(() => batchedInsert(models.WebhookDue, due)),
  ]);
  await retryTransient(() => batchedInsert(outbox, [{ _id: LEGACY_SCAN_ID, occurredAt: NEVER }]));
  return outcomes.flat().filter((o) => o === 'inserted').length;
}
