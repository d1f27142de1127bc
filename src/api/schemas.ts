import { z } from 'zod';

/** The documented error body (decisions §3), for the OpenAPI document. */
export const errorBody = z.object({
  detail: z.string(),
  code: z.string(),
  errors: z.array(z.object({ detail: z.string(), code: z.string(), attr: z.string() })).optional(),
});
