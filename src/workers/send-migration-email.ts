import { UnrecoverableError, type Job } from 'bullmq';
import { accountNested } from '../models/account.js';
import { accountHolderEmail } from '../creation/records.js';
import { migrationEmail, sendMail } from '../creation/email.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from '../jobs/context.js';
import { isDuplicateKey } from '../infra/mongo.js';

export type EmailOutcome =
  | { ok: true; status: 'sent' | 'skipped' | 'uncertain' | 'not_wanted'; reason?: string }
  | { ok: false; code: 'account_not_found' };

/**
 * Sends the migration e-mail at most once per account. Inserting the account's EmailDelivery document is
 * the claim (a unique `_id`, safe where conditional updates are not atomic). A job that finds a claim still
 * `sending` follows a crash mid-send: the mail may have gone, so it is marked `uncertain`, never re-sent.
 * An SMTP error removes the claim and the job retries.
 */
export async function sendMigrationEmailJob(
  data: JobData<'send-migration-email'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<EmailOutcome> {
  const { Account, EmailDelivery } = ctx.db.models;
  const account = await Account.findById(data.accountId).lean();
  if (!account) return { ok: false, code: 'account_not_found' };
  if (account.migrationEmailStatus === 'skipped') return { ok: true, status: 'skipped' };
  if (account.migrationEmailStatus !== 'pending' && account.migrationEmailStatus !== 'sending') {
    const status = account.migrationEmailStatus;
    return { ok: true, status: status === 'sent' || status === 'uncertain' ? status : 'not_wanted' };
  }
  try {
    await EmailDelivery.create({ _id: String(data.accountId), status: 'sending' });
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const claim = await EmailDelivery.findById(String(data.accountId)).lean();
    if (claim?.status === 'sending') {
      await EmailDelivery.updateOne({ _id: String(data.accountId) }, { $set: { status: 'uncertain' } });
      await Account.updateOne({ _id: data.accountId }, { $set: { migrationEmailStatus: 'uncertain' } });
      ctx.log.warn('migration e-mail may have been sent by an interrupted attempt; not sending again');
      return { ok: true, status: 'uncertain' };
    }
    return { ok: true, status: claim?.status === 'sent' ? 'sent' : 'uncertain' };
  }
  await Account.updateOne({ _id: data.accountId }, { $set: { migrationEmailStatus: 'sending' } });
  const claimed = account;
  const finish = async (status: 'sent' | 'skipped', reason?: string): Promise<EmailOutcome> => {
    if (status === 'sent')
      await EmailDelivery.updateOne({ _id: String(data.accountId) }, { $set: { status: 'sent' } });
    else await EmailDelivery.deleteOne({ _id: String(data.accountId) });
    await Account.updateOne(
      { _id: data.accountId },
      { $set: { migrationEmailStatus: status, migrationEmailAt: ctx.clock() } },
    );
    return { ok: true, status, ...(reason ? { reason } : {}) };
  };

  const customers = accountNested<{ account_roles?: string[]; email?: string; given_name?: string }>(
    claimed,
    'customers',
  );
  const to = accountHolderEmail(customers);
  if (!ctx.config.SMTP_URL) {
    ctx.log.info({ account_number: claimed.number }, 'SMTP_URL not configured; migration e-mail skipped');
    return finish('skipped', 'smtp_not_configured');
  }
  if (!to) {
    ctx.log.info(
      { account_number: claimed.number },
      'account holder has no e-mail address; migration e-mail skipped',
    );
    return finish('skipped', 'no_address');
  }
  const holder = customers.find((c) => c.account_roles?.includes('ACCOUNT_HOLDER'));
  try {
    await sendMail(
      ctx.config.SMTP_URL,
      ctx.config.MAIL_FROM,
      migrationEmail(to, { givenName: holder?.given_name, accountNumber: claimed.number }),
    );
  } catch (err) {
    await EmailDelivery.deleteOne({ _id: String(data.accountId) });
    await Account.updateOne({ _id: data.accountId }, { $set: { migrationEmailStatus: 'pending' } });
    throw smtpFailure(err);
  }
  ctx.log.info({ account_number: claimed.number }, 'migration e-mail sent');
  return finish('sent');
}

/**
 * The job's error for a failed send, without the server's text (it may quote the address). An SMTP 5xx
 * answer (credentials refused, recipient rejected) is permanent: the job fails at once, and an operator can
 * retry it from the dashboard once the cause is fixed. Anything else (connection, 4xx) is retried.
 */
function smtpFailure(err: unknown): Error {
  const { code, responseCode } = err as { code?: unknown; responseCode?: unknown };
  const what = `SMTP failure${typeof code === 'string' ? ` ${code}` : ''}${typeof responseCode === 'number' ? ` ${responseCode}` : ''}`;
  return typeof responseCode === 'number' && responseCode >= 500
    ? new UnrecoverableError(`${what} (permanent)`)
    : new Error(what);
}
