import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ValidationContext, ValidationResult } from '../../domain/validation/index.js';
import { postImportContext, type PostImportContext } from '../../use-cases/post-import/context.js';
import type { Refusal, VerifyOutcome } from '../../use-cases/post-import/outcomes.js';
import { verificationRefusalDetails } from '../../use-cases/post-import/payment-instructions.js';
import { resolveTarget, type PostImportTarget } from '../../use-cases/post-import/target.js';
import type { WebhookProcess } from '../../use-cases/webhooks/webhook-process.js';
import { ApiError, errorCatalogue } from './errors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The context of every post-import step the API runs (its account locks are the process's line). */
    postImport: PostImportContext;
  }
}

/**
 * The HTTP side of the post-import steps (`src/use-cases/post-import/`): the context they run with, built
 * from the app's services once per process (`app.postImport`), the request they serve, and their refusals as
 * the documented errors. The queues are looked up when a step uses them (they are decorated after the
 * services).
 */
export function apiPostImportContext(
  app: FastifyInstance,
  webhookProcess: WebhookProcess,
): PostImportContext {
  return postImportContext({
    storage: app.storage,
    redis: app.redis,
    config: app.config,
    clock: () => app.clock(),
    webhooks: () => app.queues.queue('webhooks'),
    webhookProcess,
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
