import type { Types } from 'mongoose';
import type { CohortPlan } from '../../domain/cutover/plan.js';
import type { Models } from '../models/index.js';
import type { CohortPlanDoc } from '../models/cohort-plan.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * The repository of cohort plans (`models/cohort-plan.ts`): one per supplier, by `_id` (the supplier's code),
 * written whole by a replace with upsert, so declaring a plan again updates it. The plans are few (one per
 * supplier of a migration), so the workers' periodic read of every plan with a window reads a small collection.
 */

type Declared = Omit<CohortPlan, 'importSupplier' | 'updatedAt'>;

function toPlan(doc: CohortPlanDoc & { _id: string }): CohortPlan {
  return {
    importSupplier: doc._id,
    expectedAccounts: doc.expectedAccounts,
    windowStart: doc.windowStart ?? null,
    windowEnd: doc.windowEnd ?? null,
    canaryAccounts: doc.canaryAccounts ?? null,
    breaker:
      doc.breakerPercent != null && doc.breakerOver != null
        ? { errorPercent: doc.breakerPercent, overAccounts: doc.breakerOver }
        : null,
    updatedAt: doc.updatedAt,
  };
}

/** Declares (or replaces) the supplier's plan; returns it as stored. */
export async function putCohortPlan(
  models: Models,
  supplier: { code: string; organisationId: Types.ObjectId },
  plan: Declared,
  now: Date,
): Promise<CohortPlan> {
  const doc = {
    _id: supplier.code,
    organisationId: supplier.organisationId,
    expectedAccounts: plan.expectedAccounts,
    windowStart: plan.windowStart,
    windowEnd: plan.windowEnd,
    canaryAccounts: plan.canaryAccounts,
    breakerPercent: plan.breaker?.errorPercent ?? null,
    breakerOver: plan.breaker?.overAccounts ?? null,
    updatedAt: now,
  };
  await retryTransient(() =>
    models.CohortPlan.replaceOne({ _id: supplier.code }, doc, { upsert: true }).exec(),
  );
  return toPlan(doc);
}

/** The supplier's plan, or null. */
export async function findCohortPlan(models: Models, code: string): Promise<CohortPlan | null> {
  const doc = await retryTransient(() =>
    models.CohortPlan.findById(code).lean<CohortPlanDoc & { _id: string }>().exec(),
  );
  return doc ? toPlan(doc) : null;
}

/** Every plan, with its organisation (the workers' periodic checks). */
export async function listCohortPlans(
  models: Models,
): Promise<(CohortPlan & { organisationId: Types.ObjectId })[]> {
  const docs = await retryTransient(() =>
    models.CohortPlan.find({}).lean<(CohortPlanDoc & { _id: string })[]>().exec(),
  );
  return docs.map((doc) => ({ ...toPlan(doc), organisationId: doc.organisationId }));
}
