import { Schema, type InferSchemaType } from 'mongoose';

export const deliveryStatuses = ['pending', 'delivered', 'failed'] as const;

/**
 * One event's delivery to one endpoint. `_id` `<eventId>.<endpointId>`: an event dispatched twice (a retried
 * dispatch, the outbox sweep) still has one delivery per endpoint. Kept whatever its outcome: failed ones
 * are replayed from here. Its state as inserted is step 0 of its history; each later change is a step of its
 * own (`webhookDeliveryStepSchema`), which this record then copies (`replays`, `step`: the copied step's): the
 * copy may be behind its latest step, never ahead.
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
    /** Replays so far: part of a replay's job id. The series of steps the state is from (a replay starts one). */
    replays: { type: Number, default: 0 },
    /** The step of that series the state is from (0: as inserted, or as a replay started it). */
    step: { type: Number, default: 0 },
  },
  { timestamps: true, collection: 'webhook_deliveries', versionKey: false },
);
// No index on status and due time: the sweep finds pending deliveries in `webhook_due` (`models/webhook-outbox.ts`),
// and an index that nothing reads still costs every delivery's insert and update. (A MongoDB database made before
// keeps its `status_1_nextAttemptAt_1`, harmless; drop it at leisure. On FerretDB the schema sync drops it, with
// every index that is not unique: `syncIndexes` in `models/index.ts`.)
export type WebhookDelivery = InferSchemaType<typeof webhookDeliverySchema>;

export const deliveryId = (eventId: string, endpointId: string) => `${eventId}.${endpointId}`;

/**
 * A step of a delivery's history: its state after an attempt (or after finding its endpoint removed), or the
 * start of a replay's series (step 0). `_id` `<deliveryId>/<series>/<step>`: written once, by the one run of the
 * delivery's job that inserts it first (FerretDB v1 has no atomic conditional update; an insert of an `_id` is
 * atomic), never updated. A run that made an attempt after reading step k inserts step k + 1; finding it there,
 * it lost to another run (a stalled job run again while its first run goes on), whose outcome stands.
 */
export const webhookDeliveryStepSchema = new Schema(
  {
    _id: { type: String, required: true },
    deliveryId: { type: String, required: true },
    /** For an organisation's listing (`webhook deliveries`). */
    organisationId: { type: Schema.Types.ObjectId, required: true, index: true },
    series: { type: Number, required: true },
    step: { type: Number, required: true },
    status: { type: String, enum: deliveryStatuses, required: true },
    attempts: { type: Number, required: true },
    lastHttpStatus: { type: Number, default: null },
    nextAttemptAt: { type: Date, default: null },
    /** When it was written. */
    at: { type: Date, required: true },
  },
  { collection: 'webhook_delivery_steps', versionKey: false },
);
export type WebhookDeliveryStep = InferSchemaType<typeof webhookDeliveryStepSchema>;

export const deliveryStepId = (delivery: string, series: number, step: number) =>
  `${delivery}/${series}/${step}`;
