import { createHash } from 'node:crypto';
import type { PostImportContext } from './context.js';
import type { PostImportTarget } from './target.js';

export type PostImportResource =
  'notes' | 'transactions' | 'billing_documents' | 'statements' | 'payment_instruction';

/**
 * What a post-import write added, as its `post_import.completed-v1` event reports it: `ref` identifies the
 * write (with the resource, the event's id), `count` the distinct items it put on the account.
 */
export type Written = { ref: string; count: number };

/**
 * The identity of a post-import write from what identifies its items (transaction ids and their ledger,
 * statement ids, note dedup keys, a ledger's one billing import), never from the request's bytes: a request
 * sent again with its fields in another order is the same write, and finds the entry it wrote.
 */
export function writeRef(...identity: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 32);
}

/** The key of a write in its account's journal (`RequestMark.key`): unique per resource and ref. */
export const requestKey = (resource: PostImportResource, ref: string) => `${resource}:${ref}`;

/**
 * Publishes a post-import write (`post_import.completed-v1`) or a vendor's refusal of a payment instruction
 * (`post_import.error-v1`), after the write it reports and before the answer. Its id is derived from
 * (account, resource, ref), so the same write recorded twice is one event.
 *
 * The count is what the write added, as its journal entry records it (`RequestMark`): an item counts once
 * however many requests carry it, and an item already on the account does not count. A request sent again
 * finds its entry and publishes the same event with the entry's count. So a failure to record fails the
 * request (503 while the database is unreachable): the client sends it again, which records the event then,
 * and an acknowledged write always has its event, even when a process dies between the two.
 */
export async function publishPostImport(
  ctx: PostImportContext,
  target: PostImportTarget<{ external_account_number: string }>,
  input: {
    resource: PostImportResource;
    ref: string;
    count: number;
    error?: { code: string; detail: string };
  },
): Promise<void> {
  if (input.count === 0 && !input.error) return;
  const { supplier, account, request } = target;
  const externalAccountNumber = target.data.external_account_number;
  const event = await ctx.storage.events.recordPostImport(
    {
      key: account.processId,
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
      ref: input.ref,
      count: input.count,
      ...(input.error ? { error: { ...input.error, domain: 'post_import' } } : {}),
    },
    ctx.clock(),
  );
  await ctx.relay([event], request.id);
}
