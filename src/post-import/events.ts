import { createHash } from 'node:crypto';
import { processKey } from '../models/account-import-process.js';
import type { PostImportContext } from './context.js';
import type { PostImportTarget } from './target.js';

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
  ctx: PostImportContext,
  target: PostImportTarget<{ external_account_number: string }>,
  input: {
    resource: PostImportResource;
    count: number;
    repeatable: boolean;
    error?: { code: string; detail: string };
  },
): Promise<void> {
  if (input.count === 0 && !input.error) return;
  const { supplier, account, request } = target;
  const externalAccountNumber = target.data.external_account_number;
  const ref = createHash('sha256')
    .update(JSON.stringify(request.body ?? null))
    .digest('hex')
    .slice(0, 32);
  try {
    const event = await ctx.storage.events.recordPostImport(
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
      ctx.clock(),
    );
    await ctx.relay([event], request.id);
  } catch (err) {
    if (input.repeatable) throw err;
    request.log.error(
      { err: (err as Error).message, resource: input.resource },
      'post-import event not recorded',
    );
  }
}
