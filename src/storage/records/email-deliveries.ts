import { isDuplicateKey } from '../../infra/mongo.js';
import { accountNested } from '../models/account.js';
import type { Models } from '../models/index.js';

/**
 * The repository of migration e-mails: the account's e-mail status (`migrationEmailStatus`) and the claim on
 * its delivery (an EmailDelivery document under the account's id). Inserting the claim is what lets exactly
 * one attempt send: its `_id` is unique, safe where conditional updates are not atomic (FerretDB v1).
 */

/** What the migration e-mail reads of a customer. */
export type MailCustomer = { account_roles?: string[]; email?: string; given_name?: string };

/** What the migration e-mail reads of an account. */
export type MailAccount = {
  number: string;
  /** null (not wanted), pending, sending, sent, skipped (no SMTP / no address), uncertain. */
  migrationEmailStatus: string | null;
  customers: MailCustomer[];
};

/** The account's number, e-mail status and customers, or null when there is no such account. */
export async function findMailAccount(models: Models, accountId: string): Promise<MailAccount | null> {
  const account = await models.Account.findById(accountId).lean();
  if (!account) return null;
  return {
    number: account.number,
    migrationEmailStatus: account.migrationEmailStatus ?? null,
    customers: accountNested<MailCustomer>(account, 'customers'),
  };
}

/**
 * Claims the account's e-mail for this attempt (the account's status becomes `sending`), or answers the
 * status of the claim already there (null: it went between the insert and the read).
 */
export async function claimDelivery(
  models: Models,
  accountId: string,
): Promise<{ claimed: true } | { claimed: false; status: string | null }> {
  try {
    await models.EmailDelivery.create({ _id: accountId, status: 'sending' });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const claim = await models.EmailDelivery.findById(accountId).lean();
    return { claimed: false, status: claim?.status ?? null };
  }
  await models.Account.updateOne({ _id: accountId }, { $set: { migrationEmailStatus: 'sending' } });
  return { claimed: true };
}

/** A claim an interrupted attempt left `sending`: the mail may have gone, so it is `uncertain` for good. */
export async function markDeliveryUncertain(models: Models, accountId: string): Promise<void> {
  await models.EmailDelivery.updateOne({ _id: accountId }, { $set: { status: 'uncertain' } });
  await models.Account.updateOne({ _id: accountId }, { $set: { migrationEmailStatus: 'uncertain' } });
}

/** The e-mail's end, on the account with its time: sent (the claim stays, `sent`) or skipped (it goes). */
export async function finishDelivery(
  models: Models,
  accountId: string,
  status: 'sent' | 'skipped',
  at: Date,
): Promise<void> {
  if (status === 'sent')
    await models.EmailDelivery.updateOne({ _id: accountId }, { $set: { status: 'sent' } });
  else await models.EmailDelivery.deleteOne({ _id: accountId });
  await models.Account.updateOne(
    { _id: accountId },
    { $set: { migrationEmailStatus: status, migrationEmailAt: at } },
  );
}

/** A failed send gives the claim back: the account's e-mail is `pending` again, for the job's retry. */
export async function releaseDelivery(models: Models, accountId: string): Promise<void> {
  await models.EmailDelivery.deleteOne({ _id: accountId });
  await models.Account.updateOne({ _id: accountId }, { $set: { migrationEmailStatus: 'pending' } });
}
