import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

const isZod = (value: unknown) => typeof value === 'object' && value !== null && '_zod' in value;

/** Routes of third-party plugins (the GraphQL endpoint) carry JSON schemas; they are documented elsewhere. */
function usesOnlyZod(schema: Record<string, unknown> | undefined): boolean {
  if (!schema) return true;
  const parts = ['body', 'querystring', 'params', 'headers']
    .map((k) => schema[k])
    .filter((v) => v !== undefined);
  const responses = Object.values((schema.response as Record<string, unknown> | undefined) ?? {});
  return [...parts, ...responses].every(isZod);
}

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
      transform: (input) =>
        usesOnlyZod(input.schema as Record<string, unknown> | undefined)
          ? jsonSchemaTransform(input)
          : { schema: { hide: true }, url: input.url },
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'docs' },
);
