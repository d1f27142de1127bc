import { Schema } from 'mongoose';

/**
 * The outbox's index: the import events written undispatched (someone may be owed their webhook), written
 * before the events and deleted once they are dispatched. Most are pages (`_id` `page:…`, `keys` the events'
 * `_id`s, `occurredAt` the earliest event's), one per group of events a process writes together
 * (`storage/webhook-outbox.ts`); an event whose dispatch leaves its writer has an entry of its own (`_id` the
 * event's `_id`). The outbox sweep reads this collection, which holds only the events still in flight, instead
 * of querying `import_events`: on FerretDB a query on anything but `_id` reads the whole collection, and that
 * grows with the migration (30,000 events, 10,000 accounts, cost it 6 s of CPU per sweep). Same on MongoDB,
 * where it replaces an index.
 *
 * The entry with `_id` `LEGACY_SCAN_ID` says that events written undispatched, and deliveries written pending,
 * before these entries existed have been given one (see `WebhookStore.indexLegacy`); its `occurredAt` is the
 * last date there is, so the sweep never takes it for an event.
 */
export const webhookOutboxSchema = new Schema(
  {
    _id: { type: String, required: true },
    occurredAt: { type: Date, required: true },
    /** A page's events (`storage/webhook-outbox.ts`); none on an event's own entry. */
    keys: { type: [String], default: undefined },
  },
  { collection: 'webhook_outbox', versionKey: false },
);
webhookOutboxSchema.index({ occurredAt: 1 });

/**
 * The same for deliveries: one entry per delivery pending (its next attempt due at `dueAt`), written before the
 * delivery is written pending, moved with each retry, deleted once the delivery is delivered or failed. The
 * sweep looks for deliveries whose job was lost (a Redis failover) among the entries past due, instead of
 * querying `webhook_deliveries`, which FerretDB would read whole.
 */
export const webhookDueSchema = new Schema(
  {
    _id: { type: String, required: true },
    dueAt: { type: Date, required: true },
  },
  { collection: 'webhook_due', versionKey: false },
);
webhookDueSchema.index({ dueAt: 1 });

export const LEGACY_SCAN_ID = '~legacy-events-indexed';
/** The last date a BSON date can hold: never "older than" anything the sweep asks for. */
export const NEVER = new Date(8_640_000_000_000_000);
