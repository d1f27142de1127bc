import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import {
  addAnswerExamples,
  addParameterExamples,
  addTokenMutation,
  dropEmptyBodies,
  orderPaths,
} from '../../openapi/document-parts.js';
import { addResponseHeaders } from '../../openapi/response-headers.js';

const isZod = (value: unknown) => typeof value === 'object' && value !== null && '_zod' in value;

/** Routes of third-party plugins (the GraphQL endpoint) carry JSON schemas; the token mutation is added by hand. */
function usesOnlyZod(schema: Record<string, unknown> | undefined): boolean {
  if (!schema) return true;
  const parts = ['body', 'querystring', 'params', 'headers']
    .map((k) => schema[k])
    .filter((v) => v !== undefined);
  const responses = Object.values((schema.response as Record<string, unknown> | undefined) ?? {});
  return [...parts, ...responses].every(isZod);
}

/** The document's tags, in the order a migration goes through them. */
export const OPENAPI_TAGS = [
  { name: 'authentication', description: 'Exchange the organisation API key for a token (GraphQL).' },
  { name: 'accounts', description: 'Validate, stage and create accounts.' },
  { name: 'post-import', description: 'Import notes, transactions, documents and payment instructions.' },
  { name: 'status', description: 'Import status of one account, lists per import supplier.' },
  {
    name: 'v2',
    description: 'Asynchronous imports: schedule a creation inside a window, follow its status and events.',
  },
  { name: 'reference', description: 'The values in force for the open lists.' },
];

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
            'at `POST /v1/graphql/` and send it as `Authorization: Token <jwt>`. The guide with every endpoint, ' +
            "its examples and the service's decisions is docs/api.md; every error code is in docs/error-codes.md.",
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        // Relative: the service that serves this document is the one it describes.
        servers: [{ url: '/', description: 'This deployment' }],
        tags: OPENAPI_TAGS,
        components: {
          securitySchemes: {
            token: {
              type: 'apiKey',
              in: 'header',
              name: 'Authorization',
              description: '`Token <jwt>` (also `Bearer <jwt>` or the bare token), from obtainKrakenToken.',
            },
          },
        },
        security: [{ token: [] }],
      },
      transform: (input) =>
        usesOnlyZod(input.schema as Record<string, unknown> | undefined)
          ? jsonSchemaTransform(input)
          : { schema: { hide: true }, url: input.url },
      transformObject: (input) => {
        if (!('openapiObject' in input)) return input.swaggerObject;
        const document = input.openapiObject;
        addTokenMutation(document);
        dropEmptyBodies(document);
        addParameterExamples(document);
        addAnswerExamples(document);
        addResponseHeaders(document);
        orderPaths(
          document,
          OPENAPI_TAGS.map((tag) => tag.name),
        );
        return document;
      },
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'docs' },
);
