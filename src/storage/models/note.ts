import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A note on an account. `dedupKey` is body + (given created_at or nothing): the unique index makes
 * concurrent identical imports converge on one note. Build it with `noteDedupKey` wherever notes are written.
 */
export const noteSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    dedupKey: { type: String, required: true },
    /** Hash of the content alone (body and document locations): an undated import matches a note of any date. */
    contentHash: { type: String, default: null },
    body: { type: String, default: null },
    documentPaths: { type: [String], default: [] },
    noteCreatedAt: { type: Date, required: true },
    isPinned: { type: Boolean, default: false },
    unpinAt: { type: Date, default: null },
    origin: { type: String, enum: ['account_payload', 'note_import', 'system'], required: true },
  },
  { timestamps: true, collection: 'notes' },
);
noteSchema.index({ accountId: 1, dedupKey: 1 }, { unique: true });
noteSchema.index({ accountId: 1, contentHash: 1 });
export type Note = InferSchemaType<typeof noteSchema>;

/** The dedup identity of a note (shared with reconciliation's expected side, so it lives in the domain). */
