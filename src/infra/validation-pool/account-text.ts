import { validateAccount, type FieldError, type ValidationContext } from '../../domain/validation/index.js';
import { isPoisoned, parseJsonText } from './json-body.js';

/**
 * Validate-account on the raw body text: what the route needs, and nothing it would have to copy back
 * but the answer. `importSupplier` is the body's `import_supplier` when it is a string (any other value
 * names no supplier); `json` is the normalised account, serialised as the route answers it.
 */
export type AccountTextOutcome =
  | { kind: 'malformed' }
  | { kind: 'valid'; importSupplier: string | null; json: string }
  | { kind: 'invalid'; importSupplier: string | null; errors: FieldError[] };

function importSupplierOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const code = (body as Record<string, unknown>).import_supplier;
  return typeof code === 'string' ? code : null;
}

/** Parse, validate and serialise one account body. Throws only for an unknown `ctx.region`. */
export function validateAccountText(text: string, ctx: ValidationContext): AccountTextOutcome {
  let body: unknown;
  try {
    body = parseJsonText(text);
  } catch {
    return { kind: 'malformed' };
  }
  const result = validateAccount(body, ctx);
  const importSupplier = importSupplierOf(body);
  // A valid account has no "__proto__" or "constructor" key anywhere: the schema allows no unknown keys
  // and metadata values refuse both. So only a refused body needs the poisoning check, which then
  // answers as a malformed body does.
  if (result.ok) return { kind: 'valid', importSupplier, json: JSON.stringify(result.data) };
  if (isPoisoned(text, body)) return { kind: 'malformed' };
  return { kind: 'invalid', importSupplier, errors: result.errors };
}
