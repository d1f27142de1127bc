import { Schema, type InferSchemaType } from 'mongoose';

/**
 * An organisation's webhook subscription: where its import events are sent, which types (none listed: all),
 * and the signing secret (`whsec_` + base64, shown once when added; never listed or logged). Removing an
 * endpoint keeps it (its deliveries still name it) and stops new deliveries to it.
 */
export const webhookEndpointSchema = new Schema(
  {
    organisationId: { type: Schema.Types.ObjectId, required: true, index: true },
    url: { type: String, required: true },
    events: { type: [String], default: [] },
    secret: { type: String, required: true },
    removedAt: { type: Date, default: null },
    /** When it starts receiving events (added plus `WEBHOOK_ACTIVATION_DELAY_MS`); none: when it was added. */
    activeFrom: { type: Date, default: null },
  },
  { timestamps: true, collection: 'webhook_endpoints' },
);
export type WebhookEndpoint = InferSchemaType<typeof webhookEndpointSchema>;
