import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/** OpenAPI generated from the routes' zod schemas: every route registered later appears automatically. */
export default fp(
  async (app) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Account migration import service',
          version: '1.0.0',
          description:
            'Validate, stage and create migrated accounts, then import notes, transactions, billing documents, ' +
            'statements and payment instructions onto them. Obtain a token with the `obtainKrakenToken` mutation ' +
            'at `POST /v1/graphql/` and send it as `Authorization: Token <jwt>`. Error codes: see docs/error-codes.md.',
        },
        components: {
          securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization' } },
        },
        security: [{ token: [] }],
      },
      transform: jsonSchemaTransform,
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'docs' },
);
