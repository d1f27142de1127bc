import { Schema, type InferSchemaType } from 'mongoose';

/**
 * One account's migration, keyed by (supplier code, external account number).
 * `stagedPayload` is the validated payload as serialized JSON so that arbitrary metadata round-trips exactly
 * (keys with dots or `$` would not survive as a BSON document on every MongoDB-compatible server).
 */
export const accountImportProcessSchema = new Schema(
  {
    organisationId: { type: Schema.Types.ObjectId, required: true },
    importSupplier: { type: String, required: true },
    externalAccountNumber: { type: String, required: true },
    stagedPayload: { type: String, default: null },
    stagedAt: { type: Date, default: null },
    skipped: { type: Boolean, default: false },
    krakenAccountNumber: { type: String, default: null },
    accountCreatedAt: { type: Date, default: null },
    /** Number of real (non-dry-run) creates accepted; part of the deterministic id of each create job. */
    creationAttempt: { type: Number, default: 0 },
    /** The id of the latest create job: while it is queued or running, the status is IN_PROGRESS. */
    creationJobId: { type: String, default: null },
  },
  { timestamps: true, collection: 'account_import_processes' },
);
accountImportProcessSchema.index({ importSupplier: 1, externalAccountNumber: 1 }, { unique: true });
export type AccountImportProcess = InferSchemaType<typeof accountImportProcessSchema>;
