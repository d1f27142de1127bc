import { processKey } from '../processes/process-key.js';
import { Schema, type InferSchemaType } from 'mongoose';

/**
 * One account's migration, keyed by (supplier code, external account number). The staged payload itself
 * lives in `staged_payloads` under the same `_id`, so scans of processes (lists) touch small documents only;
 * `stagedAt` here says whether (and when) something is staged.
 */
export const accountImportProcessSchema = new Schema(
  {
    _id: { type: String, required: true },
    organisationId: { type: Schema.Types.ObjectId, required: true },
    importSupplier: { type: String, required: true },
    externalAccountNumber: { type: String, required: true },
    stagedAt: { type: Date, default: null },
    skipped: { type: Boolean, default: false },
    krakenAccountNumber: { type: String, default: null },
    accountCreatedAt: { type: Date, default: null },
    /**
     * The create job known to the database: written with the "imported" mark (so a retried finished job
     * returns its success) and when the API's wait runs out (so the status stays IN_PROGRESS while it is
     * queued). The attempt counter behind job ids lives in Redis next to the creation slots.
     */
    creationJobId: { type: String, default: null },
    /**
     * The last refusal of a create for invalid staged data, as JSON `{code, errors: [{code, attr}]}`: codes and
     * paths only, never values. Null until a create is refused so.
     */
    creationRefusal: { type: String, default: null },
    /**
     * Its import events start with CREATED at position 0 (written before this document, so true here means
     * it is there): a creation may then record its start at position 1 without reading the history first.
     */
    history: { type: Boolean, default: false },
    /**
     * Legacy: payloads now live in `staged_payloads`; never read or written by the service. Declared (no
     * default, so new documents do not carry it) only so that older test seeds passing it still compile.
     */
    stagedPayload: { type: String, select: false },
  },
  { timestamps: true, collection: 'account_import_processes' },
);
// Documents created without an explicit `_id` get their natural key.
accountImportProcessSchema.pre('validate', function () {
  if (this._id == null) this._id = processKey(this.importSupplier, this.externalAccountNumber);
});
accountImportProcessSchema.index({ importSupplier: 1, externalAccountNumber: 1 }, { unique: true });
export type AccountImportProcess = InferSchemaType<typeof accountImportProcessSchema>;
