// Writes docs/examples/account.json (the account example of the OpenAPI document) and
// docs/examples/account-validated.json (what validate-account answers for it): `npx tsx scripts/gen-api-examples.ts`.
// A test checks that both are up to date.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { examples } from '../src/api/openapi/examples.js';
import { defaultCatalogue, validateAccount } from '../src/domain/validation/index.js';

export const ACCOUNT_EXAMPLE_PATH = fileURLToPath(new URL('../docs/examples/account.json', import.meta.url));
export const VALIDATED_EXAMPLE_PATH = fileURLToPath(
  new URL('../docs/examples/account-validated.json', import.meta.url),
);

/** The validated account, as validate-account answers it (the example's dates are all in the past). */
export function validatedAccountExample(): unknown {
  const today = new Date().toISOString().slice(0, 10);
  const result = validateAccount(examples.account, { region: 'ES', catalogue: defaultCatalogue, today });
  if (!result.ok) throw new Error(`the account example is invalid: ${JSON.stringify(result.errors)}`);
  return result.data;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(ACCOUNT_EXAMPLE_PATH, `${JSON.stringify(examples.account, null, 2)}\n`);
  await writeFile(VALIDATED_EXAMPLE_PATH, `${JSON.stringify(validatedAccountExample(), null, 2)}\n`);
}
