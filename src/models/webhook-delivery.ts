import { Schema, type InferSchemaType } from 'mongoose';

export const deliveryStatuses = ['pending', 'delivered', 'failed'] as const;

/**
 * One event's delivery to one endpoint. `_id` `<eventId>.<endpointId>`: an event dispatched twice (a retried
 * dispatch, the outbox sweep) still has one delivery per endpoint. Kept whatever its outcome: failed ones
 * are replayed from here.
 */
export const webhookDeliverySchema = new Schema(
  {
    _id: { type: String, required: true },
    eventId: { type: String, required: true },
    /** The event's `_id` in `import_events` (its body is read from there). */
    eventKey: { type: String, required: true },
    type: { type: String, required: true },
    endpointId: { type: Schema.Types.ObjectId, required: true },
    organisationId: { type: Schema.Types.ObjectId, required: true, index: true },
    status: { type: String, enum: deliveryStatuses, required: true },
    attempts: { type: Number, required: true },
    lastHttpStatus: { type: Number, default: null },
    nextAttemptAt: { type: Date, default: null },
    /** Replays so far: part of a replay's job id. */
    replays: { type: Number, default: 0 },
  },
  { timestamps: true, collection: 'webhook_deliveries', versionKey: false },
);
// No index on status and due time: the sweep finds pending deliveries in `webhook_due` (`models/webhook-outbox.ts`),
// and an index that nothing reads still costs every delivery's insert and update. (A MongoDB database made before
// keeps its `status_1_nextAttemptAt_1`, harmless; drop it at leisure. On FerretDB the schema sync drops it, with
// every index that is not unique: `syncIndexes` in `models/index.ts`.)
export type WebhookDelivery = InferSchemaType<typeof webhookDeliverySchema>;

export const deliveryId = (eventId: string, endpointId: string) => `${eventId}.${endpointId}`;
