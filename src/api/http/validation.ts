import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountPayload } from '../../schemas/account.js';
import { validateAccount, type FieldError, type ValidationContext } from '../../domain/validation/index.js';
import { sortErrors } from '../../domain/validation/field-error.js';
import { deploymentCatalogue, todayAt, validationContextAt } from '../../domain/validation/deployment.js';
import { DEFAULT_REGION, isRegionName } from '../../domain/region/index.js';
import { validationFingerprint } from '../../use-cases/creation/validation-fingerprint.js';
import type { ValidationPool } from '../../infra/validation-pool/pool.js';
import { ApiError } from './errors.js';
import type { Supplier } from '../../storage/records/suppliers.js';

/** "Today" for date rules is the UTC calendar date of the app's clock. */
const todayOf = (app: FastifyInstance): string => todayAt(app.clock());

export function validationContext(app: FastifyInstance, supplier: Supplier | null): ValidationContext {
  return validationContextAt(deploymentCatalogue(app.config), supplier?.region, app.clock());
}

function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body)
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

function unknownSupplier(code: unknown, attr: string): FieldError[] {
  return typeof code === 'string' && code.length > 0
    ? [
        {
          detail: `Import supplier ${code.slice(0, 64)} does not exist.`,
          code: 'import_supplier_not_found',
          attr,
        },
      ]
    : [];
}

/**
 * Validate-account and staging: every schema and rule error, plus an `import_supplier` error when the
 * caller has no such supplier (another organisation's supplier counts as none). A valid account comes with
 * the fingerprint of the validation it passed, for staging to keep with it.
 */
export async function validateAccountRequest(
  request: FastifyRequest,
  body: unknown,
): Promise<{ supplier: Supplier; data: AccountPayload; validatedWith: string }> {
  const supplier = await request.tenant.findSupplier(field(body, 'import_supplier'));
  const ctx = validationContext(request.server, supplier);
  const result = validateAccount(body, ctx);
  if (!result.ok || !supplier)
    throw invalidAccount(result.ok ? [] : result.errors, supplier, field(body, 'import_supplier'));
  return { supplier, data: result.data, validatedWith: validationFingerprint(ctx) };
}

/** The 400 for a failed validation, an unknown supplier or both, every error in the documented order. */
function invalidAccount(errors: FieldError[], supplier: Supplier | null, importSupplier: unknown): ApiError {
  const all = [...errors, ...(supplier ? [] : unknownSupplier(importSupplier, 'import_supplier'))];
  return new ApiError('account_failed_validation', { errors: sortErrors(all) });
}

// The region a body needs is its supplier's, known only once the body is parsed; the pool parses it.
// So the task runs with the region the app's previous request needed (one region per deployment is the
// rule) and runs again, rarely, when the supplier turns out to need another.
const regionHints = new WeakMap<FastifyInstance, string>();

/**
 * Validate-account on the validation pool, from the raw body text: the same answers as
 * `validateAccountRequest`, and the normalised account as the JSON text of the 200 answer.
 */
export async function validateAccountOnPool(
  request: FastifyRequest,
  text: string,
  pool: ValidationPool,
): Promise<string> {
  const app = request.server;
  const today = todayOf(app);
  const run = async (region: string) => {
    const outcome = await pool.validate({ text, region, today });
    // As Fastify answers a body its JSON parser refuses (it closes the connection after a parser error).
    if (outcome.kind === 'malformed') throw new ApiError('parse_error', { headers: { connection: 'close' } });
    return outcome;
  };
  const hint = regionHints.get(app) ?? DEFAULT_REGION;
  let outcome = await run(hint);
  const supplier = await request.tenant.findSupplier(outcome.importSupplier);
  const region = supplier?.region ?? DEFAULT_REGION;
  if (region !== hint) {
    if (isRegionName(region)) regionHints.set(app, region);
    outcome = await run(region);
  }
  if (outcome.kind === 'invalid' || !supplier)
    throw invalidAccount(outcome.kind === 'invalid' ? outcome.errors : [], supplier, outcome.importSupplier);
  return outcome.json;
}
