import { LRUCache } from 'lru-cache';
import { accountIdFor } from '../creation/create-account.js';
import { documentLocation as storageLocation } from '../domain/document-location.js';
import { validationContextAt } from '../domain/validation/deployment.js';
import type { ValidationContext, ValidationResult } from '../domain/validation/index.js';
import { processKey } from '../models/account-import-process.js';
import type { ImportSupplier } from '../models/import-supplier.js';
import type { Models } from '../models/index.js';
import { findAccount as findStoredAccount, type AccountRow } from '../storage/accounts.js';
import { findProcess } from '../storage/import-processes.js';
import type { PostImportContext, PostImportRequest } from './context.js';
import type { Refusal } from './outcomes.js';

/** What a post-import step needs of the supplier. */
export type PostImportSupplier = Pick<
  ImportSupplier,
  'code' | 'status' | 'organisationId' | 'region' | 'documentBucket' | 'documentRoot'
>;

/** The caller's supplier with this code, or null (another organisation's supplier counts as none). */
export type FindSupplier = (code: string) => Promise<PostImportSupplier | null>;

/** What a post-import step knows of its account: what never changes once the account is created. */
export type CreatedAccount = Pick<AccountRow, '_id' | 'number'>;

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
    if (supplier.status !== 'Ongoing') {
      return {
        ok: false,
        refusal: {
          code: 'import_supplier_migration_not_ongoing',
          detail: `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
        },
      };
    }
  }
  const result = validate(body, validationContextAt(ctx.catalogue, supplier?.region, ctx.clock()));
  if (!result.ok) return { ok: false, refusal: { code: 'request_failed_validation', errors: result.errors } };
  if (!supplier) return { ok: false, refusal: { code: 'import_supplier_not_found' } };
  const account = await findCreatedAccount(ctx.models, supplier.code, result.data.external_account_number);
  if (!account) return { ok: false, refusal: { code: 'account_not_found' } };
  return { ok: true, target: { supplier, account, data: result.data, request } };
}

/** The accounts found created, per database (processes and accounts by their key): see `findCreatedAccount`. */
const createdAccounts = new WeakMap<Models, LRUCache<string, CreatedAccount>>();

/**
 * A created account, or null for an unknown, staged-only or half-created one (creation crashed before its
 * last step, marking the process imported). Found once, it is remembered: a process once imported stays
 * imported, and its account keeps its id and number for good, so what is remembered is never stale (a
 * migration sends each account several post-import requests; each one after the first reads nothing here).
 * Only what is found is remembered: an account not created yet is looked up again on every request.
 */
export async function findCreatedAccount(
  models: Models,
  supplierCode: string,
  externalAccountNumber: string,
): Promise<CreatedAccount | null> {
  const key = processKey(supplierCode, externalAccountNumber);
  let known = createdAccounts.get(models);
  if (!known) {
    known = new LRUCache({ max: 100_000 });
    createdAccounts.set(models, known);
  }
  const cached = known.get(key);
  if (cached) return cached;
  const process = await findProcess(models, key);
  const account = process?.krakenAccountNumber ? await findStoredAccount(models, accountIdFor(key)) : null;
  if (!account) return null;
  const created = { _id: account._id, number: account.number };
  known.set(key, created);
  return created;
}

/** Where a document of the target's supplier lives in object storage, by its path in a request. */
export function documentResolver(
  ctx: PostImportContext,
  supplier: Pick<PostImportSupplier, 'documentBucket' | 'documentRoot'>,
): (path: string) => string {
  return (path) =>
    storageLocation(supplier.documentBucket ?? ctx.documentBucket, supplier.documentRoot ?? '', path);
}
