import type { Types } from 'mongoose';
import { isDuplicateKey } from '../../infra/mongo.js';
import type { Models } from '../models/index.js';

/**
 * The repository of payment instructions. `activeSlot` (= the account id while an instruction is active) is
 * unique, so inserting an active instruction is the claim: one per account, on FerretDB v1 (no partial
 * indexes, no atomic conditional updates) as on MongoDB. The lookup of the active one is a filter on that
 * unique field: an index lookup on MongoDB, a collection read on FerretDB v1 (payment instructions are few).
 */

export async function findActiveInstruction(models: Models, accountId: Types.ObjectId) {
  return models.PaymentInstruction.findOne({ activeSlot: accountId.toHexString() }).lean();
}

/** Inserts the account's active instruction; 'taken' when the account already has one (any). */
export async function insertActiveInstruction(
  models: Models,
  accountId: Types.ObjectId,
  instruction: { vendor: string; reference: string; type: string; vendorDetails: object },
): Promise<{ inserted: true; id: string } | { inserted: false }> {
  try {
    const doc = await models.PaymentInstruction.create({
      accountId,
      ...instruction,
      status: 'ACTIVE',
      activeSlot: accountId.toHexString(),
    });
    return { inserted: true, id: doc._id.toHexString() };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return { inserted: false };
  }
}
