import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ValidationContext, ValidationResult } from '../domain/validation/index.js';
import { postImportContext, type PostImportContext } from '../post-import/context.js';
import type { Refusal, VerifyOutcome } from '../post-import/outcomes.js';
import { verificationRefusalDetails } from '../post-import/payment-instructions.js';
import { resolveTarget, type PostImportTarget } from '../post-import/target.js';
import { ApiError, errorCatalogue } from './errors.js';

/**
 * The HTTP side of the post-import steps (`src/post-import/`): the context they run with, built from the
 * app's services, the request they serve, and their refusals as the documented errors.
 */
export function apiPostImportContext(app: FastifyInstance): PostImportContext {
  return postImportContext({
    models: app.db.models,
    redis: app.redis,
    config: app.config,
    clock: () => app.clock(),
    webhooks: () => app.queues.queue('webhooks'),
    verifications: {
      removeFinished: (jobId) => app.queues.removeFinished('payment-verification', jobId),
      verify: (data, options) =>
        app.queues.enqueueAndWait<'verify-payment-instruction', VerifyOutcome>(
          'verify-payment-instruction',
          data,
          options,
        ),
    },
  });
}

/**
 * A post-import request resolved by the steps' common front (`resolveTarget`): its caller's supplier
 * (scoped by the tenancy plugin), the created account and the validated body; a refusal is thrown as its
 * error.
 */
export async function requestTarget<T extends { import_supplier: string; external_account_number: string }>(
  ctx: PostImportContext,
  request: FastifyRequest,
  validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
): Promise<PostImportTarget<T>> {
  const resolved = await resolveTarget(
    ctx,
    (code) => request.tenant.findSupplier(code),
    { id: request.id, body: request.body, log: request.log },
    validate,
  );
  if (!resolved.ok) throw refusalError(resolved.refusal);
  return resolved.target;
}

/** A post-import refusal as its documented error. */
export function refusalError(refusal: Refusal): ApiError {
  return new ApiError(refusal.code, {
    errors: refusal.errors ?? [],
    ...(refusal.detail !== undefined ? { detail: refusal.detail } : {}),
  });
}

// A refused verification's event carries the same wording as the error answered: checked when compiling.
const sameWording: {
  [K in keyof typeof verificationRefusalDetails]: (typeof errorCatalogue)[K]['detail'];
} = verificationRefusalDetails;
void sameWording;
