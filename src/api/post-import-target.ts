import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { relayEvents } from '../webhooks/relay.js';
import { ApiError } from './errors.js';
import type { SupplierDoc } from './plugins/tenancy.js';
import { validationContext } from './validation.js';
import { accountIdFor } from '../creation/create-account.js';
import type { ValidationContext, ValidationResult } from '../domain/validation/index.js';
import { findAccount as findStoredAccount, type AccountRow } from '../storage/accounts.js';
import { findProcess } from '../storage/import-processes.js';
import { processKey } from '../models/account-import-process.js';
import { documentLocation as storageLocation } from '../domain/document-location.js';
import type { Models } from '../models/index.js';
import { AccountLocks } from '../post-import/account-lock.js';
import type { Refusal } from '../post-import/outcomes.js';
import { storageFor, type Storage } from '../storage/index.js';

/**
 * The common front of every post-import endpoint: the caller's supplier must exist and be `Ongoing`, the body
 * must pass its validator (with the supplier's region), and the account must have been created.
 */
export async function resolveImport<T extends { import_supplier: string; external_account_number: string }>(
  app: FastifyInstance,
  request: FastifyRequest,
  validate: (input: unknown, ctx: ValidationContext) => ValidationResult<T>,
): Promise<{ supplier: SupplierDoc; account: AccountRow; data: T }> {
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

/** The account locks of this deployment (namespaced like its queues). */
export function accountLocks(app: FastifyInstance): AccountLocks {
  return new AccountLocks(app.redis, app.config.QUEUE_PREFIX);
}

/** The repositories on the app's database connection. */
export function storage(app: FastifyInstance): Storage {
  return storageFor(app.db.models);
}

/** A post-import refusal as its documented error. */
export function refusalError(refusal: Refusal): ApiError {
  return new ApiError(refusal.code, { errors: refusal.errors ?? [] });
}

/**
 * A created account; an unknown, staged-only or half-created one (creation crashed before its last step,
 * marking the process imported) is 404 `account_not_found`.
 */
export async function findAccount(
  models: Models,
  supplierCode: string,
  externalAccountNumber: string,
): Promise<AccountRow> {
  const key = processKey(supplierCode, externalAccountNumber);
  const process = await findProcess(models, key);
  const account = process?.krakenAccountNumber ? await findStoredAccount(models, accountIdFor(key)) : null;
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

export type PostImportResource =
  'notes' | 'transactions' | 'billing_documents' | 'statements' | 'payment_instruction';

/**
 * Publishes a post-import write (`post_import.completed-v1`) or a vendor's refusal of a payment instruction
 * (`post_import.error-v1`), after the write it reports and before the answer. Its id is derived from the
 * request's body, so the same request recorded twice is one event.
 *
 * `repeatable`: sending the request again answers success again (notes and transactions report
 * `…_ALREADY_EXISTS`, a payment instruction joins its verification). Then `count` is every item of the
 * request, and a failure to record fails the request (503 while the database is unreachable): the client sends
 * it again, the write finds its data there, and the event is recorded then. So an acknowledged write always has
 * its event, even when a process dies between the two. Statements and billing documents refuse a repeat
 * (`…_already_exists`): for them a failure to record is logged and the answer stands (that event is lost).
 */
export async function publishPostImport(
  app: FastifyInstance,
  request: FastifyRequest,
  supplier: Pick<SupplierDoc, 'code' | 'organisationId'>,
  account: AccountRow,
  externalAccountNumber: string,
  input: {
    resource: PostImportResource;
    count: number;
    repeatable: boolean;
    error?: { code: string; detail: string };
  },
): Promise<void> {
  if (input.count === 0 && !input.error) return;
  const ref = createHash('sha256')
    .update(JSON.stringify(request.body ?? null))
    .digest('hex')
    .slice(0, 32);
  try {
    const event = await storage(app).events.recordPostImport(
      {
        key: processKey(supplier.code, externalAccountNumber),
        organisationId: supplier.organisationId,
        importSupplier: supplier.code,
        externalAccountNumber,
        krakenAccountNumber: account.number,
      },
      {
        type: input.error
          ? 'data_import.import_process.post_import.error-v1'
          : 'data_import.import_process.post_import.completed-v1',
        resource: input.resource,
        ref: input.error ? `${ref}:${input.error.code}` : ref,
        count: input.count,
        ...(input.error ? { error: { ...input.error, domain: 'post_import' } } : {}),
      },
      app.clock(),
    );
    await relayEvents(app.queues.queue('webhooks'), [event], request.id);
  } catch (err) {
    if (input.repeatable) throw err;
    request.log.error(
      { err: (err as Error).message, resource: input.resource },
      'post-import event not recorded',
    );
  }
}
