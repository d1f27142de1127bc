import type { Types } from 'mongoose';
import { processKey } from './process-key.js';
import type { Models } from '../models/index.js';

/**
 * An operator's skip of an account (`import-admin account skip`): its import process is marked skipped, created
 * if nothing was staged yet, so that staging and creation refuse it. By `_id` (the process key), as every
 * read and write of import processes.
 */
export async function skipProcess(
  models: Models,
  supplier: { code: string; organisationId: Types.ObjectId },
  externalAccountNumber: string,
): Promise<{ skipped: true } | { skipped: false; importedAs: string }> {
  const _id = processKey(supplier.code, externalAccountNumber);
  const existing = await models.AccountImportProcess.findById(_id, { krakenAccountNumber: 1 }).lean();
  // Already created: there is nothing left to skip.
  if (existing?.krakenAccountNumber) return { skipped: false, importedAs: existing.krakenAccountNumber };
  await models.AccountImportProcess.updateOne(
    { _id },
    {
      $set: { skipped: true },
      $setOnInsert: {
        organisationId: supplier.organisationId,
        importSupplier: supplier.code,
        externalAccountNumber,
      },
    },
    { upsert: true },
  );
  return { skipped: true };
}
