import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { catalogueNames } from '../../../../vocabulary/catalogue.js';
import { commonErrors, errorResponses } from '../../schemas.js';
import { validationContext } from '../../validation.js';

const catalogueBody = z
  .object(Object.fromEntries(catalogueNames.map((name) => [name, z.array(z.string())])))
  .describe(
    'Every open list by name, with the values in force: the defaults, then what the deployment added.',
  );

/** The open enumerations (decisions: catalogues) as this deployment validates them. */
export default async function catalogueRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/catalogue/',
    {
      schema: {
        tags: ['reference'],
        operationId: 'getCatalogue',
        summary: 'The values in force for every open list (reason, payment_type, account_type, …)',
        description:
          'Lists whose values the interface leaves open have a default list that a deployment may extend ' +
          '(CATALOGUE_EXTRA). A value outside the list in force is refused with invalid_choice.',
        response: { 200: catalogueBody, ...errorResponses(commonErrors) },
      },
    },
    async () => {
      const { catalogue } = validationContext(app, null);
      return Object.fromEntries(catalogueNames.map((name) => [name, [...catalogue[name]]]));
    },
  );
}
