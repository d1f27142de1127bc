import type { Types } from 'mongoose';
import { processKey } from '../models/account-import-process.js';
import type { Models } from '../models/index.js';
import { findProcess, storeStagedPayload } from '../storage/import-processes.js';

export { loadStagedPayload, payloadHash } from '../storage/import-processes.js';

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
 * Stages an account: refused once it is imported or skipped, else its payload is stored or replaced. The
 * refusals are a read before the writes: a stage racing the final step of a create may still store its
 * payload after the account exists, which changes nothing (an imported process is never created from again,
 * and an interrupted creation resumes from the payload it started from).
 */
export async function stageAccount(models: Models, input: StageInput): Promise<StageOutcome> {
  const existing = await findProcess(models, processKey(input.importSupplier, input.externalAccountNumber));
  if (existing?.krakenAccountNumber)
    return { status: 'already_imported', krakenAccountNumber: existing.krakenAccountNumber };
  if (existing?.skipped) return { status: 'skipped' };
  return { status: await storeStagedPayload(models, input, existing !== null) };
}
