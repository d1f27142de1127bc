import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validatePaymentInstruction } from '../../../domain/validation/index.js';
import { paymentInstructionSchema } from '../../../schemas/post-import.js';
import { checkActive, type VerifyOutcome } from '../../../post-import/payment-instructions.js';
import { publishPostImport, resolveImport } from '../../post-import-target.js';
import { jobId } from '../../../jobs/catalog.js';
import { ApiError, errorCatalogue } from '../../errors.js';
import { examples, withExample } from '../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

export default async function paymentInstructionRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/payment-instruction/create/',
    {
      schema: {
        tags: ['post-import'],
        operationId: 'createPaymentInstruction',
        summary: "Verify a payment instruction at its vendor and make it the account's active instruction",
        description:
          'Verification runs on a worker while the request waits (PAYMENT_VERIFICATION_WAIT_MS). 400 vendor_instruction_not_found ' +
          'or account_has_active_payment_instruction: do not retry unchanged. 500 vendor_unavailable: retry unchanged; a retry ' +
          'joins a verification still under way and never records a second instruction.',
        body: withExample(
          paymentInstructionSchema,
          'A Stripe card payment method',
          examples.paymentInstruction,
        ),
        response: {
          201: z
            .object({ kraken_account_number: z.string(), reference: z.string() })
            .describe("The instruction is the account's active one."),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], {
            400:
              'request_failed_validation, vendor_instruction_not_found or account_has_active_payment_instruction ' +
              '(do not retry unchanged), or import_supplier_migration_not_ongoing.',
            404: 'account_not_found (the account must be created, not only staged) or import_supplier_not_found.',
            500: 'vendor_unavailable (retry unchanged: a retry joins the verification still under way) or internal_error.',
          }),
        },
      },
    },
    async (request, reply) => {
      const { supplier, account, data } = await resolveImport(app, request, validatePaymentInstruction);
      const wanted = { vendor: data.vendor, reference: data.reference, type: data.type };
      const created = () =>
        reply.code(201).send({ kraken_account_number: account.number, reference: data.reference });

      const known = await checkActive(app.db.models, account._id, wanted);
      if (known?.ok) return created();
      if (known) throw new ApiError(known.code);

      // One job per (account, instruction): a retry joins a verification still running. A finished one is
      // removed first so that a retry after a failure really asks the vendor again.
      const digest = createHash('sha256')
        .update(JSON.stringify([data.vendor, data.type, data.reference]))
        .digest('hex')
        .slice(0, 32);
      const id = jobId('verify', account._id.toHexString(), digest);
      await app.queues.removeFinished('payment-verification', id);

      const { result, timedOut } = await app.queues.enqueueAndWait<
        'verify-payment-instruction',
        VerifyOutcome
      >(
        'verify-payment-instruction',
        { accountId: account._id.toHexString(), ...wanted, requestId: request.id },
        { jobId: id, waitMs: app.config.PAYMENT_VERIFICATION_WAIT_MS },
      );
      if (timedOut || !result) throw new ApiError('vendor_unavailable');
      if (!result.ok) {
        await publishPostImport(app, request, supplier, account, data.external_account_number, {
          resource: 'payment_instruction',
          count: 0,
          repeatable: true,
          error: { code: result.code, detail: errorCatalogue[result.code].detail },
        });
        throw new ApiError(result.code);
      }
      await publishPostImport(app, request, supplier, account, data.external_account_number, {
        resource: 'payment_instruction',
        count: 1,
        repeatable: true,
      });
      return created();
    },
  );
}
