import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A supplier's cohort plan (issue 47), as declared through `PUT …/plan/`: one per supplier, `_id` the
 * supplier's code (codes are unique), so a rerun of the declaration replaces it and never adds a second. Its
 * live state (paused or not, its counts) is Redis's (`use-cases/cutover/plan-gate.ts`); each pause is also
 * recorded as a cohort event (`storage/cutover/cohort-events.ts`).
 */
export const cohortPlanSchema = new Schema(
  {
    _id: { type: String, required: true },
    organisationId: { type: Schema.Types.ObjectId, required: true },
    expectedAccounts: { type: Number, required: true },
    /** YYYY-MM-DDTHH:MM:SSZ, or null: no window. */
    windowStart: { type: String, default: null },
    windowEnd: { type: String, default: null },
    canaryAccounts: { type: Number, default: null },
    breakerPercent: { type: Number, default: null },
    breakerOver: { type: Number, default: null },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'cohort_plans', versionKey: false },
);
export type CohortPlanDoc = InferSchemaType<typeof cohortPlanSchema>;
