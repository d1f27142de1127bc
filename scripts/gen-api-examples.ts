// Writes docs/examples/account.json (the account example of the OpenAPI document), docs/examples/account-validated.json
// (what validate-account answers for it) and docs/examples/schedule-account.json (the v2 schedule example):
// `npx tsx scripts/gen-api-examples.ts`. A test checks that they are up to date.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { examples } from '../src/api/openapi/examples.js';
import { validatedAccountExample } from '../src/api/openapi/answers.js';

export const ACCOUNT_EXAMPLE_PATH = fileURLToPath(new URL('../docs/examples/account.json', import.meta.url));
export const VALIDATED_EXAMPLE_PATH = fileURLToPath(
  new URL('../docs/examples/account-validated.json', import.meta.url),
);
export const SCHEDULE_EXAMPLE_PATH = fileURLToPath(
  new URL('../docs/examples/schedule-account.json', import.meta.url),
);

/** Writes `value` as the project's formatter lays JSON out, so `npm run format:check` holds without a second step. */
async function writeJson(path: string, value: unknown): Promise<void> {
  const options = (await resolveConfig(path)) ?? {};
  await writeFile(path, await format(JSON.stringify(value, null, 2), { ...options, filepath: path }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeJson(ACCOUNT_EXAMPLE_PATH, examples.account);
  await writeJson(VALIDATED_EXAMPLE_PATH, validatedAccountExample());
  await writeJson(SCHEDULE_EXAMPLE_PATH, examples.scheduleAccount);
}
