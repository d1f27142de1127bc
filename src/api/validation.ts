import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountPayload } from '../schemas/account.js';
import {
  buildCatalogue,
  catalogueNames,
  validateAccount,
  type Catalogue,
  type CatalogueName,
  type FieldError,
  type ValidationContext,
  type ValidationResult,
} from '../domain/validation/index.js';
import { sortErrors } from '../domain/validation/field-error.js';
import { ApiError, type ErrorCode } from './errors.js';
import type { SupplierDoc } from './plugins/tenancy.js';

const catalogues = new WeakMap<FastifyInstance, Catalogue>();

/** The deployment's enumeration catalogue: defaults plus CATALOGUE_EXTRA, built once per app. */
function catalogueFor(app: FastifyInstance): Catalogue {
  let catalogue = catalogues.get(app);
  if (!catalogue) {
    const extra = Object.fromEntries(
      Object.entries(app.config.CATALOGUE_EXTRA).filter(([name]) =>
        catalogueNames.includes(name as CatalogueName),
      ),
    );
    catalogue = buildCatalogue(extra);
    catalogues.set(app, catalogue);
  }
  return catalogue;
}

/** "Today" for date rules is the UTC calendar date of the app's clock. */
export function validationContext(app: FastifyInstance, supplier: SupplierDoc | null): ValidationContext {
  return {
    region: supplier?.region ?? 'ES',
    catalogue: catalogueFor(app),
    today: app.clock().toISOString().slice(0, 10),
  };
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
 * caller has no such supplier (another organisation's supplier counts as none).
 */
export async function validateAccountRequest(
  request: FastifyRequest,
  body: unknown,
): Promise<{ supplier: SupplierDoc; data: AccountPayload }> {
  const supplier = await request.tenant.findSupplier(field(body, 'import_supplier'));
  const result = validateAccount(body, validationContext(request.server, supplier));
  const errors = [
    ...(result.ok ? [] : result.errors),
    ...(supplier ? [] : unknownSupplier(field(body, 'import_supplier'), 'import_supplier')),
  ];
  if (!result.ok || !supplier || errors.length > 0)
    throw new ApiError('account_failed_validation', { errors: sortErrors(errors) });
  return { supplier, data: result.data };
}

/** Any other body: a validator result becomes the data or a 400 with every error. */
export function requireValid<T>(
  result: ValidationResult<T>,
  code: ErrorCode = 'request_failed_validation',
): T {
  if (!result.ok) throw new ApiError(code, { errors: result.errors });
  return result.data;
}
