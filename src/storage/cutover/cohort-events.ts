import { randomUUID } from 'node:crypto';
import type { Types } from 'mongoose';
import { isDuplicateKey } from '../../infra/mongo.js';
import type { Models } from '../models/index.js';
import type { ImportEventDoc } from '../models/import-event.js';
import { newEventId, webhookBody, type RecordedEvent } from '../processes/process-event-records.js';
import type { WebhookStore } from '../webhooks/webhook-store.js';
import { retryTransient } from '../write-path/transient.js';

/** The cohort webhooks (issue 47): not about one account, about a supplier's cohort plan. */
export type CohortEventType = 'cohort.paused-v1' | 'cohort.at_risk-v1';

/** Stands for "the whole cohort" where an import event names its account. */
export const COHORT_ACCOUNT = '*';

/**
 * Cohort events, kept with the import events (`models/import-event.ts`, `seq` null like post-import events) so
 * that they go through the same outbox, dispatch, signing and retries. Their `_id` is derived from the
 * transition they report (`cohort:<supplier>@<kind>:<n>`, n counted by the plan's Redis script that decided the
 * transition), so a transition recorded twice is one event, and each transition has its own.
 */
export class CohortEvents {
  constructor(
    private readonly model: Models['ImportEvent'],
    private readonly webhooks: WebhookStore,
  ) {}

  async record(
    supplier: { code: string; organisationId: Types.ObjectId },
    type: CohortEventType,
    transition: number,
    data: Record<string, unknown>,
    now: Date,
  ): Promise<RecordedEvent> {
    const kind = type === 'cohort.paused-v1' ? 'paused' : 'at_risk';
    const eventId = newEventId();
    const body = { import_supplier: supplier.code, ...data };
    const subscribed = await this.webhooks.audience
      .anySubscribed(supplier.organisationId, type, now)
      // silent-ok: written undispatched, and the relay (or the sweep) decides who gets it
      .catch(() => null);
    const doc: ImportEventDoc & { _id: string } = {
      _id: `cohort:${supplier.code}@${kind}:${transition}`,
      eventId,
      organisationId: supplier.organisationId,
      importSupplier: supplier.code,
      externalAccountNumber: COHORT_ACCOUNT,
      seq: null,
      event: null,
      type,
      data: JSON.stringify(body),
      run: null,
      body: webhookBody(eventId, type, now, body),
      dispatched: subscribed === false,
      writer: randomUUID(),
      occurredAt: now,
    };
    await this.webhooks.outbox.expectDispatch(doc);
    try {
      await retryTransient(() => this.model.create([doc]));
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const there = await this.model.findById(doc._id, { writer: 1 }).lean<{ writer: string }>().exec();
      // This writer's own insert, whose answer was lost (a retried insert).
      if (there?.writer === doc.writer) return subscribed ? { ...doc, subscribed: true } : doc;
      // Recorded before (the same transition): its own writer dispatches it.
      await this.webhooks.outbox.lostInsert(doc._id);
      return { _id: doc._id, eventId, dispatched: true };
    }
    return subscribed ? { ...doc, subscribed: true } : doc;
  }
}
