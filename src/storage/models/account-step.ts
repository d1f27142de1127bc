import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A step of an account's migration that no other record keeps, for its timeline: a re-stage (a v1 stage of a
 * process staged before, with other data). The first stage is the history's CREATED; a v2 schedule is its
 * SCHEDULED (with the payload's hash). `_id` `<process key>@s:<n>`, n = 1, 2, …: a writer inserts the number
 * after the last it read, so of two at once one wins and the other reads again (unique keys, not locks), and a
 * stage of the data staged last (a request sent again) adds none. Codes and hashes only, never payload values.
 */
export const accountStepSchema = new Schema(
  {
    _id: { type: String, required: true },
    /** The staged payload's hash, shortened (which data; never the data). */
    hash: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { collection: 'account_steps', versionKey: false },
);
export type AccountStepDoc = InferSchemaType<typeof accountStepSchema>;

export const accountStepId = (processKey: string, n: number) => `${processKey}@s:${n}`;
