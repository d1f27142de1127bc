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
// The outbox sweep's look for overdue deliveries (see `WebhookStore.overdueDeliveries`).
webhookDeliverySchema.index({ status: 1, nextAttemptAt: 1 });
export type WebhookDelivery = InferSchemaType<typeof webhookDeliverySchema>;

export const deliveryId = (eventId: string, endpointId: string) => `${eventId}.${endpointId}`;
