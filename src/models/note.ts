import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A note on an account. `dedupKey` is body + (given created_at or nothing): the unique index makes
 * concurrent identical imports converge on one note.
 */
export const noteSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    dedupKey: { type: String, required: true },
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
export type Note = InferSchemaType<typeof noteSchema>;
