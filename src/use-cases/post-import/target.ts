import { documentLocation as storageLocation } from '../../domain/document-location.js';
import { migrationRefusal } from '../../domain/supplier.js';
import { validationContextAt } from '../../domain/validation/deployment.js';
import type { ValidationContext, ValidationResult } from '../../domain/validation/index.js';
import type { CreatedAccount } from '../../storage/records/created-accounts.js';
import type { Supplier } from '../../storage/records/suppliers.js';
import type { PostImportContext, PostImportRequest } from './context.js';
import type { Refusal } from './outcomes.js';

/** What a post-import step needs of the supplier. */
export type PostImportSupplier = Pick<
  Supplier,
  'code' | 'status' | 'organisationId' | 'region' | 'documentBucket' | 'documentRoot'
>;

/** The caller's supplier with this code, or null (another organisation's supplier counts as none). */
export type FindSupplier = (code: string) => Promise<PostImportSupplier | null>;

/** A post-import request resolved: its `Ongoing` supplier, the created account, the validated body. */
export type PostImportTarget<T> = {
  supplier: PostImportSupplier;
  account: CreatedAccount;
  data: T;
  request: PostImportRequest;
};

export type TargetOutcome<T> = { ok: true; target: PostImportTarget<T> } | { ok: false; refusal: Refusal };

type TargetBody = { import_supplier: string; external_account_number: string };

/**
 * The common front of every post-import step: the caller's supplier must exist and be `Ongoing`, the body
 * must pass its validator (with the supplier's region), and the account must have been created. The supplier
 * is looked up first: an unknown or unusable one refuses the request whatever else the body holds.
 */
export async function resolveTarget<T extends TargetBody>(
  ctx: PostImportContext,
  findSupplier: FindSupplier,
  request: PostImportRequest,
  validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
): Promise<TargetOutcome<T>> {
  const body = request.body as Record<string, unknown> | null | undefined;
  const code = body && typeof body === 'object' ? body.import_supplier : undefined;
  // Without a supplier code the validator reports the missing field; with one, the supplier must be usable.
  let supplier: PostImportSupplier | null = null;
  if (typeof code === 'string' && code.trim() !== '') {
    supplier = await findSupplier(code.trim());
    if (!supplier) return { ok: false, refusal: { code: 'import_supplier_not_found' } };
    const refusal = migrationRefusal(supplier);
    if (refusal) return { ok: false, refusal };
  }
  const result = validate(body, validationContextAt(ctx.catalogue, supplier?.region, ctx.clock()));
  if (!result.ok) return { ok: false, refusal: { code: 'request_failed_validation', errors: result.errors } };
  if (!supplier) return { ok: false, refusal: { code: 'import_supplier_not_found' } };
  const account = await ctx.storage.createdAccounts.find(supplier.code, result.data.external_account_number);
  if (!account) return { ok: false, refusal: { code: 'account_not_found' } };
  return { ok: true, target: { supplier, account, data: result.data, request } };
}

/** Where a document of the target's supplier lives in object storage, by its path in a request. */
export function documentResolver(
  ctx: PostImportContext,
  supplier: Pick<PostImportSupplier, 'documentBucket' | 'documentRoot'>,
): (path: string) => string {
  return (path) =>
    storageLocation(supplier.documentBucket ?? ctx.documentBucket, supplier.documentRoot ?? '', path);
}
