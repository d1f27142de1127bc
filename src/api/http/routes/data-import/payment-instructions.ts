import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validatePaymentInstruction } from '../../../../domain/validation/index.js';
import { paymentInstructionSchema } from '../../../../schemas/post-import.js';
import {
  paymentInstructionStatuses,
  runPaymentInstruction,
} from '../../../../use-cases/post-import/payment-instructions.js';
import { refusalError, requestTarget } from '../../post-import-target.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

export default async function paymentInstructionRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ctx = app.postImport;
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
          'joins a verification still under way and never records a second instruction. The same instruction sent again ' +
          'once it is active answers 201 with status PAYMENT_INSTRUCTION_ALREADY_ACTIVE.',
        body: withExample(
          paymentInstructionSchema,
          'A Stripe card payment method',
          examples.paymentInstruction,
        ),
        response: {
          201: z
            .object({
              kraken_account_number: z.string(),
              reference: z.string(),
              status: z
                .enum(paymentInstructionStatuses)
                .describe(
                  'PAYMENT_INSTRUCTION_CREATED: this request (or the verification under way it joined) made it the ' +
                    'active instruction. PAYMENT_INSTRUCTION_ALREADY_ACTIVE: it was already the active one when the ' +
                    'request arrived (the same instruction sent again); the vendor was not asked again.',
                ),
            })
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
      const target = await requestTarget(ctx, request, validatePaymentInstruction);
      const outcome = await runPaymentInstruction(ctx, target);
      if (!outcome.ok) throw refusalError(outcome.refusal);
      return reply.code(201).send({
        kraken_account_number: outcome.krakenAccountNumber,
        reference: outcome.reference,
        status: outcome.status,
      });
    },
  );
}
