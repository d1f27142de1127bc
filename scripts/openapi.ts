// Writes the OpenAPI document (built without a database or Redis) to the given file, or to stdout:
// `npx tsx scripts/openapi.ts .data/openapi.json`. `npm run lint:openapi` lints it with Redocly.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { buildOpenApiDocument } from '../src/api/openapi/document.js';

const out = process.argv[2];
const text = `${JSON.stringify(await buildOpenApiDocument(), null, 2)}\n`;
if (out) {
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, text);
} else {
  process.stdout.write(text);
}
