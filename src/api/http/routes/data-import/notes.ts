import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateNotesImport } from '../../../../domain/validation/index.js';
import { noteResultSchema, notesImportSchema } from '../../../../schemas/post-import.js';
import { runNotesImport } from '../../../../use-cases/post-import/notes.js';
import { requestTarget } from '../../post-import-target.js';
import { examples, withExample } from '../../../openapi/examples.js';
import { bodyErrors, commonErrors, errorResponses } from '../../schemas.js';

export default async function noteRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const ctx = app.postImport;
  app.post(
    '/notes/create/',
    {
      schema: {
        tags: ['post-import'],
        operationId: 'importNotes',
        summary: 'Import notes onto a created account',
        description:
          'A note is created unless the account already has one with the same content (and the same created_at, when given).',
        body: withExample(notesImportSchema, 'A pinned note and a note made of a document', examples.notes),
        response: {
          201: z.array(noteResultSchema).describe('One result per note, in the order sent.'),
          ...errorResponses([...bodyErrors, 404, ...commonErrors], {
            400: 'request_failed_validation with every error, or import_supplier_migration_not_ongoing.',
            404: 'account_not_found (the account must be created, not only staged) or import_supplier_not_found.',
          }),
        },
      },
    },
    async (request, reply) => {
      const target = await requestTarget(ctx, request, validateNotesImport);
      return reply.code(201).send(await runNotesImport(ctx, target));
    },
  );
}
