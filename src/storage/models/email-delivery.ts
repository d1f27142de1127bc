import { Schema, type InferSchemaType } from 'mongoose';

/**
 * The claim on an account's migration e-mail. Inserting it is the claim: the unique `_id` (the account id)
 * lets exactly one attempt through even on servers whose conditional updates are not atomic (FerretDB v1).
 */
export const emailDeliverySchema = new Schema(
  {
    _id: { type: String, required: true },
    status: { type: String, enum: ['sending', 'sent', 'uncertain'], required: true },
  },
  { timestamps: true, collection: 'email_deliveries' },
);
export type EmailDelivery = InferSchemaType<typeof emailDeliverySchema>;
