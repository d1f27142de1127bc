import { UnrecoverableError, type Job } from 'bullmq';
import { Types } from 'mongoose';
import type { VerifyOutcome } from '../use-cases/post-import/outcomes.js';
import { checkActive, recordInstruction } from '../use-cases/post-import/payment-instructions.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from './context.js';

const BACKOFF_BASE_MS = 100;
const BACKOFF_MAX_MS = 2_000;

/** Exponential backoff with full jitter (so retries of many jobs do not hit the vendor in step). */
function backoff(attempt: number): number {
  return Math.round(Math.random() * Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt));
}

/** The job must answer before the API stops waiting for it; keep a margin for the hand-back through Redis. */
export function verificationDeadline(enqueuedAt: number, waitMs: number): number {
  return enqueuedAt + waitMs - Math.min(2_000, Math.max(100, waitMs * 0.2));
}

/**
 * Verifies a payment instruction at its vendor and records it as the account's active instruction.
 * Transient vendor failures are retried here, with backoff, while the API's wait allows; then
 * `vendor_unavailable`. A call already under way when the wait runs out is allowed to finish (up to the
 * vendor timeout), so a slow vendor's late "exists" is still recorded and the client's retry finds it.
 */
export async function verifyPaymentInstructionJob(
  data: JobData<'verify-payment-instruction'>,
  job: Job,
  ctx: WorkerContext,
): Promise<VerifyOutcome> {
  const accountId = new Types.ObjectId(data.accountId);
  const wanted = { vendor: data.vendor, reference: data.reference, type: data.type };
  const existing = await checkActive(ctx.storage, accountId, wanted);
  if (existing) return existing;

  // The API accepts only enabled vendors, so this worker's PAYMENT_VENDORS differs from the API's.
  const vendor = ctx.vendors.get(data.vendor);
  if (!vendor)
    throw new UnrecoverableError(
      `payment vendor ${data.vendor} is not enabled on this worker (PAYMENT_VENDORS)`,
    );

  const deadline = verificationDeadline(job.timestamp, ctx.config.PAYMENT_VERIFICATION_WAIT_MS);
  for (let attempt = 0; ; attempt++) {
    const verdict = await vendor.verify({ reference: data.reference, type: data.type });
    switch (verdict.kind) {
      case 'found':
        ctx.log.info({ vendor: vendor.name, attempts: attempt + 1 }, 'payment instruction verified');
        return recordInstruction(ctx.storage, accountId, wanted, verdict.details);
      case 'not_found':
        ctx.log.info(
          { vendor: vendor.name, reason: verdict.reason },
          'payment instruction refused by vendor',
        );
        return { ok: false, code: 'vendor_instruction_not_found' };
      case 'unavailable':
        ctx.log.error({ vendor: vendor.name, reason: verdict.reason }, 'payment vendor unusable');
        return { ok: false, code: 'vendor_unavailable' };
      case 'transient': {
        const delay = backoff(attempt);
        ctx.log.warn(
          { vendor: vendor.name, attempt: attempt + 1, reason: verdict.reason },
          'transient payment vendor failure',
        );
        if (Date.now() + delay >= deadline) return { ok: false, code: 'vendor_unavailable' };
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}
