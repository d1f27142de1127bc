import { Schema, type InferSchemaType } from 'mongoose';

/** An organisation's API key. Only a keyed hash of the secret is stored; `prefix` identifies it to operators. */
export const apiKeySchema = new Schema(
  {
    organisationId: { type: Schema.Types.ObjectId, required: true, index: true },
    prefix: { type: String, required: true, unique: true },
    hash: { type: String, required: true, unique: true },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'api_keys' },
);
export type ApiKey = InferSchemaType<typeof apiKeySchema>;
