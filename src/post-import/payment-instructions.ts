import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { InstructionDetails } from '../vendors/index.js';
import { isDuplicateKey } from '../infra/mongo.js';

export type InstructionRequest = { vendor: string; reference: string; type: string };

/** Expected outcomes of a verification, returned (not thrown) by the job so the waiting API can map them. */
export type VerifyOutcome =
  | { ok: true; instructionId: string }
  | {
      ok: false;
      code: 'vendor_instruction_not_found' | 'account_has_active_payment_instruction' | 'vendor_unavailable';
    };

export async function activeInstruction(models: Models, accountId: Types.ObjectId) {
  return models.PaymentInstruction.findOne({ activeSlot: accountId.toHexString() }).lean();
}

export function isSameInstruction(
  active: { vendor: string; reference: string; type: string },
  wanted: InstructionRequest,
): boolean {
  return (
    active.vendor === wanted.vendor && active.reference === wanted.reference && active.type === wanted.type
  );
}

/** What an account's existing active instruction means for a request: nothing, the same one again, or a conflict. */
export async function checkActive(
  models: Models,
  accountId: Types.ObjectId,
  wanted: InstructionRequest,
): Promise<VerifyOutcome | null> {
  const active = await activeInstruction(models, accountId);
  if (!active) return null;
  return isSameInstruction(active, wanted)
    ? { ok: true, instructionId: active._id.toHexString() }
    : { ok: false, code: 'account_has_active_payment_instruction' };
}

/**
 * Records a verified instruction as the account's active one. The unique `activeSlot` (= account id) admits
 * one active instruction per account, so a retried or concurrent verification of the same reference converges
 * on one record, and a different one is refused.
 */
export async function recordInstruction(
  models: Models,
  accountId: Types.ObjectId,
  wanted: InstructionRequest,
  details: InstructionDetails,
): Promise<VerifyOutcome> {
  try {
    const doc = await models.PaymentInstruction.create({
      accountId,
      vendor: wanted.vendor,
      reference: wanted.reference,
      type: wanted.type,
      status: 'ACTIVE',
      activeSlot: accountId.toHexString(),
      vendorDetails: details,
    });
    return { ok: true, instructionId: doc._id.toHexString() };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    return (
      (await checkActive(models, accountId, wanted)) ?? {
        ok: false,
        code: 'account_has_active_payment_instruction',
      }
    );
  }
}
