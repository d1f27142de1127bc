import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { retryTransient } from './transient.js';

export type StageOutcome =
  | { status: 'created' | 'updated' }
  | { status: 'already_imported'; krakenAccountNumber: string }
  | { status: 'skipped' };

type StageInput = {
  organisationId: Types.ObjectId;
  importSupplier: string;
  externalAccountNumber: string;
  /** The payload as received (it passed validation), serialized. */
  payload: string;
  now: Date;
};

/**
 * Stores or replaces the staged payload in one conditional upsert: it matches only a process that is
 * neither imported nor skipped, and the unique key makes concurrent first stages converge on one process
 * (the loser of the insert race gets a duplicate-key error and retries as an update).
 */
export async function stageAccount(models: Models, input: StageInput): Promise<StageOutcome> {
  const key = { importSupplier: input.importSupplier, externalAccountNumber: input.externalAccountNumber };
  for (let attempt = 0; ; attempt++) {
    try {
      // Processes come into being only by staging (or skipped by an operator), so "inserted" means "first stage".
      const result = await retryTransient(() =>
        models.AccountImportProcess.updateOne(
          { ...key, krakenAccountNumber: null, skipped: { $ne: true } },
          {
            $set: { stagedPayload: input.payload, stagedAt: input.now },
            $setOnInsert: { organisationId: input.organisationId },
          },
          { upsert: true },
        ),
      );
      return { status: result.upsertedCount === 1 ? 'created' : 'updated' };
    } catch (err) {
      if ((err as { code?: number }).code !== 11000 || attempt >= 3) throw err;
      const existing = await models.AccountImportProcess.findOne(key)
        .select({ krakenAccountNumber: 1, skipped: 1 })
        .lean();
      if (existing?.krakenAccountNumber)
        return { status: 'already_imported', krakenAccountNumber: existing.krakenAccountNumber };
      if (existing?.skipped) return { status: 'skipped' };
    }
  }
}
