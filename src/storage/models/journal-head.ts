import { Schema, type InferSchemaType } from 'mongoose';

/**
 * Where an account's ledger journal ends, as far as its writers said: `_id` the account id (hex), `seq` the
 * highest entry number written (raised with `$max` after each append, never lowered). A hint, not a truth:
 * it may lag (a writer that died before raising it) but never runs ahead, so a reader probes forward from it
 * and lands on the head in one or two reads by `_id` instead of walking the journal from entry 0.
 */
export const journalHeadSchema = new Schema(
  {
    _id: { type: String, required: true },
    seq: { type: Number, required: true },
  },
  { collection: 'ledger_journal_heads', versionKey: false },
);
export type JournalHeadDoc = InferSchemaType<typeof journalHeadSchema>;
