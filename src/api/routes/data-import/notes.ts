import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validateNotesImport } from '../../../domain/validation/index.js';
import { noteResultSchema, notesImportSchema } from '../../../schemas/post-import.js';
import { importNotes } from '../../../post-import/notes.js';
import { documentLocation, resolveImport } from '../../post-import-target.js';

export default async function noteRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/notes/create/',
    {
      schema: {
        tags: ['post-import'],
        summary: 'Import notes onto a created account',
        description:
          'A note is created unless the account already has one with the same content (and the same created_at, when given).',
        body: notesImportSchema,
        response: { 201: z.array(noteResultSchema) },
      },
    },
    async (request, reply) => {
      const { supplier, account, data } = await resolveImport(app, request, validateNotesImport);
      const resolvePath = (path: string) => documentLocation(supplier, app.config.DOCUMENT_BUCKET, path);
      const results = await importNotes(app.db.models, account._id, data.notes, resolvePath, app.clock());
      return reply.code(201).send(results);
    },
  );
}
