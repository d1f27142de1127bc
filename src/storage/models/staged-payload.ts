import { Schema, type Connection, type InferSchemaType } from 'mongoose';

/**
 * The staged payload of one import process, under the process's `_id` (see `processKey`), as serialized
 * JSON so that arbitrary metadata round-trips exactly (keys with dots or `$` would not survive as a BSON
 * document on every MongoDB-compatible server). Kept apart from the process so that scanning processes
 * never decodes payloads.
 */
export const stagedPayloadSchema = new Schema(
  {
    _id: { type: String, required: true },
    /** The payload's JSON text, deflated (see `storage/packed-text.ts`); older documents hold the text itself. */
    payload: { type: Schema.Types.Mixed, required: true },
    stagedAt: { type: Date, required: true },
    /**
     * The fingerprint of the validation the payload passed when it was staged (see
     * `creation/validation-fingerprint.ts`); null when unknown (then a creation validates it again).
     */
    validatedWith: { type: String, default: null },
  },
  { collection: 'staged_payloads', versionKey: false },
);
export type StagedPayload = InferSchemaType<typeof stagedPayloadSchema>;

/** The model on a connection, registered on first use (it has no index beyond `_id`). */
export function stagedPayloadModel(conn: Connection) {
  return (conn.models.StagedPayload as ReturnType<typeof register> | undefined) ?? register(conn);
}

function register(conn: Connection) {
  return conn.model('StagedPayload', stagedPayloadSchema);
}
