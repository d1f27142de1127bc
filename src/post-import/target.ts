import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HydratedDocument } from 'mongoose';
import { ApiError } from '../api/errors.js';
import type { SupplierDoc } from '../api/plugins/tenancy.js';
import { validationContext } from '../api/validation.js';
import { accountIdFor } from '../creation/create-account.js';
import type { ValidationContext, ValidationResult } from '../domain/validation/index.js';
import type { Account } from '../models/account.js';
import { processKey } from '../models/account-import-process.js';
import { documentLocation as storageLocation } from '../domain/document-location.js';
import { isDuplicateKey } from '../infra/mongo.js';

export { isDuplicateKey };
import type { Models } from '../models/index.js';
import { LedgerLocks } from './ledger-lock.js';

export type AccountDoc = HydratedDocument<Account>;

/** YYYY-MM-DD of a UTC instant. */
function isoDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** The day after an ISO date. */
export function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return isoDay(d);
}

/**
 * The common front of every post-import endpoint: the caller's supplier must exist and be `Ongoing`, the body
 * must pass its validator (with the supplier's region), and the account must have been created.
 */
export async function resolveImport<T extends { import_supplier: string; external_account_number: string }>(
  app: FastifyInstance,
  request: FastifyRequest,
  validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
): Promise<{ supplier: SupplierDoc; account: AccountDoc; data: T }> {
  const body = request.body as Record<string, unknown> | null | undefined;
  const code = body && typeof body === 'object' ? body.import_supplier : undefined;
  // Without a supplier code the validator reports the missing field; with one, the supplier must be usable.
  const supplier =
    typeof code === 'string' && code.trim() !== ''
      ? await request.tenant.getOngoingSupplier(code.trim())
      : null;
  const result = validate(body, validationContext(app, supplier));
  if (!result.ok) throw new ApiError('request_failed_validation', { errors: result.errors });
  if (!supplier) throw new ApiError('import_supplier_not_found');
  const account = await findAccount(app.db.models, supplier.code, result.data.external_account_number);
  return { supplier, account, data: result.data };
}

/** The ledger locks of this deployment (namespaced like its queues). */
export function ledgerLocks(app: FastifyInstance): LedgerLocks {
  return new LedgerLocks(app.redis, app.config.QUEUE_PREFIX);
}

/**
 * A created account; an unknown, staged-only or half-created one (creation crashed before its last step,
 * marking the process imported) is 404 `account_not_found`. Both reads are by `_id`: the process's is its
 * natural key, the account's is derived from it.
 */
export async function findAccount(
  models: Models,
  supplierCode: string,
  externalAccountNumber: string,
): Promise<AccountDoc> {
  const process = await models.AccountImportProcess.findById(
    processKey(supplierCode, externalAccountNumber),
    { krakenAccountNumber: 1 },
  ).lean();
  const account = process?.krakenAccountNumber
    ? await models.Account.findById(accountIdFor(process._id))
    : null;
  if (!account) throw new ApiError('account_not_found');
  return account;
}

/** Where a document of this supplier lives in object storage. */
export function documentLocation(
  supplier: Pick<SupplierDoc, 'documentBucket' | 'documentRoot'>,
  defaultBucket: string,
  path: string,
): string {
  return storageLocation(supplier.documentBucket ?? defaultBucket, supplier.documentRoot ?? '', path);
}

type BulkError = {
  code?: number;
  writeErrors?: { code?: number; index?: number; err?: { index?: number; code?: number } }[];
};

/**
 * Inserts documents ignoring duplicate-key errors (another request or an earlier attempt already wrote them).
 * Returns the indexes this call actually inserted; any other failure is rethrown.
 */
export async function insertIgnoringDuplicates(
  model: { insertMany(docs: object[], opts: object): Promise<unknown> },
  docs: object[],
): Promise<Set<number>> {
  if (docs.length === 0) return new Set();
  try {
    await model.insertMany(docs, { ordered: false });
    return new Set(docs.map((_, i) => i));
  } catch (err) {
    const writeErrors = (err as BulkError).writeErrors;
    if (!writeErrors || writeErrors.length === 0) {
      if (isDuplicateKey(err) && docs.length === 1) return new Set();
      throw err;
    }
    const failed = new Set<number>();
    for (const w of writeErrors) {
      const code = w.code ?? w.err?.code;
      if (code !== 11000) throw err;
      failed.add(w.index ?? w.err?.index ?? -1);
    }
    return new Set(docs.map((_, i) => i).filter((i) => !failed.has(i)));
  }
}
