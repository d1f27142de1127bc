import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { accountPayloadSchema } from '../../../../schemas/account.js';
import { createValidationPool } from '../../../../infra/validation-pool/pool.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';
import { DEFAULT_REGION } from '../../../../domain/region/index.js';
import { catalogueExtra } from '../../../../domain/validation/deployment.js';
import { validateAccountRequest, validateAccountOnPool } from '../../validation.js';

/** A JSON body as this plugin's parser hands it over: still text. */
class JsonText {
  constructor(readonly text: string) {}
}

/**
 * With VALIDATION_THREADS > 0 the body is parsed, validated and the answer serialised on a pool of worker
 * threads: this plugin's JSON parser hands the body over as text, so the event loop never parses or
 * serialises the (often large) account. With 0 the route validates on the event loop. Answers are the
 * same either way.
 */
export default async function validateAccountRoutes(fastify: FastifyInstance): Promise<void> {
  const threads = fastify.config.VALIDATION_THREADS;
  const pool =
    threads > 0 ? createValidationPool(threads, { catalogueExtra: catalogueExtra(fastify.config) }) : null;
  if (pool) {
    fastify.addHook('onClose', () => pool.close());
    // Fails the start when a thread cannot load the validation code, rather than every request later.
    fastify.addHook('onReady', async () => {
      await pool.validate({ text: '{}', region: DEFAULT_REGION, today: '2000-01-01' });
    });
    // Scoped to this plugin, so to this route: the body as text, decoded as before (limits, media types
    // and empty bodies behave as before); the pool parses it.
    fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      done(null, new JsonText(body as string));
    });
  }

  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/validate-account/',
    {
      schema: {
        tags: ['accounts'],
        operationId: 'validateAccount',
        summary: 'Validate account data without storing it',
        description:
          'Answers 200 with the validated, normalised data (strings trimmed, amounts as exact decimal strings), or ' +
          '400 `account_failed_validation` listing every error. Nothing is stored.',
        body: withExample(
          accountPayloadSchema,
          'A realistic DOMESTIC account: one holder, an electricity and a gas supply point, two ledgers with six months of history and an open period',
          examples.account,
        ),
        response: {
          200: accountPayloadSchema.describe('The validated, normalised account.'),
          ...errorResponses([...bodyErrors, ...commonErrors], {
            400: 'account_failed_validation with every error (an unknown supplier is an import_supplier error).',
          }),
        },
      },
    },
    async (request, reply) => {
      const body: unknown = request.body;
      if (pool && body instanceof JsonText) {
        const json = await validateAccountOnPool(request, body.text, pool);
        // Already serialised: a string with a JSON content type is sent as it is.
        const untyped: FastifyReply = reply;
        return untyped.type('application/json; charset=utf-8').send(json);
      }
      return (await validateAccountRequest(request, body)).data;
    },
  );
}
