import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { accountPayloadSchema } from '../../../schemas/account.js';
import { errorBody } from '../../schemas.js';
import { validateAccountRequest } from '../../validation.js';

export default async function validateAccountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/validate-account/',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Validate account data without storing it',
        description:
          'Answers 200 with the validated, normalised data, or 400 `account_failed_validation` listing every error.',
        body: accountPayloadSchema,
        response: { 200: accountPayloadSchema, 400: errorBody },
      },
    },
    async (request) => (await validateAccountRequest(request, request.body)).data,
  );
}
