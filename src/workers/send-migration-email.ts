import type { Job } from 'bullmq';
import { accountHolderEmail } from '../creation/records.js';
import { migrationEmail, sendMail } from '../creation/email.js';
import type { JobData } from './catalog.js';
import type { WorkerContext } from './context.js';

export type EmailOutcome =
  | { ok: true; status: 'sent' | 'skipped' | 'uncertain' | 'not_wanted'; reason?: string }
  | { ok: false; code: 'account_not_found' };

/**
 * Sends the migration e-mail at most once per account. The account document is the claim: `pending` ->
 * `sending` (atomic) -> `sent`. A job that finds `sending` follows a crash mid-send; the mail may have gone,
 * so it is marked `uncertain` and never sent again. An SMTP error puts the claim back and the job retries.
 */
export async function sendMigrationEmailJob(
  data: JobData<'send-migration-email'>,
  _job: Job,
  ctx: WorkerContext,
): Promise<EmailOutcome> {
  const { Account } = ctx.db.models;
  const claimed = await Account.findOneAndUpdate(
    { _id: data.accountId, migrationEmailStatus: 'pending' },
    { $set: { migrationEmailStatus: 'sending' } },
    { returnDocument: 'after' },
  ).lean();
  if (!claimed) {
    const account = await Account.findById(data.accountId).select({ migrationEmailStatus: 1 }).lean();
    if (!account) return { ok: false, code: 'account_not_found' };
    if (account.migrationEmailStatus === 'sending') {
      await Account.updateOne(
        { _id: data.accountId, migrationEmailStatus: 'sending' },
        { $set: { migrationEmailStatus: 'uncertain' } },
      );
      ctx.log.warn('migration e-mail may have been sent by an interrupted attempt; not sending again');
      return { ok: true, status: 'uncertain' };
    }
    const status = account.migrationEmailStatus;
    return {
      ok: true,
      status: status === 'sent' || status === 'skipped' || status === 'uncertain' ? status : 'not_wanted',
    };
  }
  const finish = (status: 'sent' | 'skipped', reason?: string) =>
    Account.updateOne(
      { _id: data.accountId },
      { $set: { migrationEmailStatus: status, migrationEmailAt: ctx.clock() } },
    ).then((): EmailOutcome => ({ ok: true, status, ...(reason ? { reason } : {}) }));

  const to = accountHolderEmail(claimed.customers as Array<{ account_roles?: string[]; email?: string }>);
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
  const holder = (claimed.customers as Array<{ account_roles?: string[]; given_name?: string }>).find((c) =>
    c.account_roles?.includes('ACCOUNT_HOLDER'),
  );
  try {
    await sendMail(
      ctx.config.SMTP_URL,
      ctx.config.MAIL_FROM,
      migrationEmail(to, { givenName: holder?.given_name, accountNumber: claimed.number }),
    );
  } catch (err) {
    await Account.updateOne(
      { _id: data.accountId, migrationEmailStatus: 'sending' },
      { $set: { migrationEmailStatus: 'pending' } },
    );
    throw err;
  }
  ctx.log.info({ account_number: claimed.number }, 'migration e-mail sent');
  return finish('sent');
}
