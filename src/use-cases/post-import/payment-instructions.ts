import type { Types } from 'mongoose';
import { jobId } from '../../jobs/catalog.js';
import type { InstructionDetails } from '../../infra/vendors/types.js';
import type { Storage } from '../../storage/index.js';
import type { PaymentInstruction } from '../../schemas/post-import.js';
import type { PostImportContext } from './context.js';
import { publishPostImport, writeRef } from './events.js';
import type { InstructionRequest, Refusal, VerifyOutcome } from './outcomes.js';
import type { PostImportTarget } from './target.js';

/** What the payment instruction steps (here and on the verification worker) use of the storage object. */
export type InstructionStorage = Pick<Storage, 'paymentInstructions' | 'journal'>;

export function isSameInstruction(
  active: { vendor: string; reference: string; type: string },
  wanted: InstructionRequest,
): boolean {
  return (
    active.vendor === wanted.vendor && active.reference === wanted.reference && active.type === wanted.type
  );
}

/**
 * What an account's existing active instruction means for a request: nothing, the same one again, or a
 * conflict. The same one again makes sure the account's journal records it (see `recordInstruction`).
 */
export async function checkActive(
  storage: InstructionStorage,
  accountId: Types.ObjectId,
  wanted: InstructionRequest,
): Promise<VerifyOutcome | null> {
  const active = await storage.paymentInstructions.findActive(accountId);
  if (!active) return null;
  if (!isSameInstruction(active, wanted))
    return { ok: false, code: 'account_has_active_payment_instruction' };
  await journalInstruction(storage, accountId, active);
  return { ok: true, instructionId: active._id.toHexString() };
}

/**
 * The account's journal records its active instruction (vendor and status), which reconciliation reads with
 * the rest of the account's figures instead of looking the instruction up (a collection read on FerretDB v1).
 * Written after the instruction, and again by whichever request or job finds the same instruction active: a
 * process that dies between the two leaves the request unanswered, and its retry records it. An entry is
 * appended only when the journal does not say so already.
 */
async function journalInstruction(
  storage: InstructionStorage,
  accountId: Types.ObjectId,
  active: { vendor: string; status: string },
): Promise<void> {
  const recorded = { vendor: active.vendor, status: active.status };
  await storage.journal.append(
    accountId,
    (head) => {
      const known = head.summary.paymentInstruction;
      if (known?.vendor === recorded.vendor && known.status === recorded.status)
        return { write: null, result: null };
      return {
        write: {
          kind: 'payment_instruction',
          ledgers: head.ledgers,
          keys: [],
          records: {},
          paymentInstruction: recorded,
        },
        result: null,
      };
    },
    new Date(),
  );
}

/**
 * Records a verified instruction as the account's active one. The unique `activeSlot` (= account id) admits
 * one active instruction per account, so a retried or concurrent verification of the same reference converges
 * on one record, and a different one is refused.
 */
export async function recordInstruction(
  storage: InstructionStorage,
  accountId: Types.ObjectId,
  wanted: InstructionRequest,
  details: InstructionDetails,
): Promise<VerifyOutcome> {
  const written = await storage.paymentInstructions.insertActive(accountId, {
    vendor: wanted.vendor,
    reference: wanted.reference,
    type: wanted.type,
    vendorDetails: details,
  });
  if (written.inserted) {
    await journalInstruction(storage, accountId, { vendor: wanted.vendor, status: 'ACTIVE' });
    return { ok: true, instructionId: written.id };
  }
  return (
    (await checkActive(storage, accountId, wanted)) ?? {
      ok: false,
      code: 'account_has_active_payment_instruction',
    }
  );
}

/** The API's wording of a refused verification, carried by its `post_import.error-v1` event. */
export const verificationRefusalDetails = {
  vendor_instruction_not_found: 'The payment vendor has no usable instruction with this reference.',
  account_has_active_payment_instruction: 'The account already has an active payment instruction.',
  vendor_unavailable: 'The payment vendor could not be reached. Retry unchanged.',
} as const satisfies Record<Extract<VerifyOutcome, { ok: false }>['code'], string>;

/**
 * What a recorded instruction answers: `PAYMENT_INSTRUCTION_ALREADY_ACTIVE` when it was the account's active one
 * as the request arrived (the vendor is not asked again), else `PAYMENT_INSTRUCTION_CREATED`: the verification
 * this request ran, or joined, made it the active one.
 */
export const paymentInstructionStatuses = [
  'PAYMENT_INSTRUCTION_CREATED',
  'PAYMENT_INSTRUCTION_ALREADY_ACTIVE',
] as const;
export type PaymentInstructionStatus = (typeof paymentInstructionStatuses)[number];

export type PaymentInstructionOutcome =
  | { ok: true; krakenAccountNumber: string; reference: string; status: PaymentInstructionStatus }
  | { ok: false; refusal: Refusal };

/**
 * The payment instruction step: the account's active instruction if it is this one, else a verification at
 * the vendor (on a worker; this step waits, bounded) and its event, a success or the vendor's refusal.
 *
 * The success event is the instruction's (its ref is the stored instruction's id, its count 1), published
 * whenever this request finds the instruction recorded: after its own wait, or when it is sent again after
 * a verification that ended after the wait (the first answer was 500) or whose answer was lost.
 */
export async function runPaymentInstruction(
  ctx: PostImportContext,
  target: PostImportTarget<PaymentInstruction>,
): Promise<PaymentInstructionOutcome> {
  const { account, data, request } = target;
  const wanted = { vendor: data.vendor, reference: data.reference, type: data.type };

  const recorded = async (instructionId: string, status: PaymentInstructionStatus) => {
    await publishPostImport(ctx, target, { resource: 'payment_instruction', ref: instructionId, count: 1 });
    return { ok: true as const, krakenAccountNumber: account.number, reference: data.reference, status };
  };
  const known = await checkActive(ctx.storage, account._id, wanted);
  if (known?.ok) return recorded(known.instructionId, 'PAYMENT_INSTRUCTION_ALREADY_ACTIVE');
  if (known) return { ok: false, refusal: { code: known.code } };

  // One job per (account, instruction): a retry joins a verification still running. A finished one is
  // removed first so that a retry after a failure really asks the vendor again.
  const digest = writeRef(data.vendor, data.type, data.reference);
  const id = jobId('verify', account._id.toHexString(), digest);
  await ctx.verifications.removeFinished(id);

  const { result, timedOut } = await ctx.verifications.verify(
    { accountId: account._id.toHexString(), ...wanted, requestId: request.id },
    { jobId: id, waitMs: ctx.verificationWaitMs },
  );
  if (timedOut || !result) return { ok: false, refusal: { code: 'vendor_unavailable' } };
  if (!result.ok) {
    await publishPostImport(ctx, target, {
      resource: 'payment_instruction',
      ref: `${digest}:${result.code}`,
      count: 0,
      error: { code: result.code, detail: verificationRefusalDetails[result.code] },
    });
    return { ok: false, refusal: { code: result.code } };
  }
  return recorded(result.instructionId, 'PAYMENT_INSTRUCTION_CREATED');
}
