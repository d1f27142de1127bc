import { UnrecoverableError, type Job } from 'bullmq';
import type { MailAccount } from '../storage/records/email-deliveries.js';
import { accountHolderEmail } from '../use-cases/creation/records.js';
import { migrationEmail, sendMail } from '../use-cases/creation/email.js';
import type { JobData } from '../jobs/catalog.js';
import type { WorkerContext } from './context.js';

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
  const account = await ctx.storage.emailDeliveries.findAccount(data.accountId);
  if (!account) return { ok: false, code: 'account_not_found' };
  return (await claim(ctx, data.accountId, account)) ?? deliver(ctx, data.accountId, account);
}

/** Claims the account's e-mail for this job; else the outcome there is (not wanted, done, or maybe done). */
async function claim(
  ctx: WorkerContext,
  accountId: string,
  account: MailAccount,
): Promise<EmailOutcome | null> {
  const status = account.migrationEmailStatus;
  if (status === 'skipped') return { ok: true, status: 'skipped' };
  if (status !== 'pending' && status !== 'sending')
    return { ok: true, status: status === 'sent' || status === 'uncertain' ? status : 'not_wanted' };
  const claimed = await ctx.storage.emailDeliveries.claim(accountId);
  if (claimed.claimed) return null;
  if (claimed.status === 'sending') {
    await ctx.storage.emailDeliveries.markUncertain(accountId);
    ctx.log.warn('migration e-mail may have been sent by an interrupted attempt; not sending again');
    return { ok: true, status: 'uncertain' };
  }
  return { ok: true, status: claimed.status === 'sent' ? 'sent' : 'uncertain' };
}

/** Sends the claimed e-mail (or skips it: no SMTP, no address) and records its end on the account. */
async function deliver(ctx: WorkerContext, accountId: string, account: MailAccount): Promise<EmailOutcome> {
  const deliveries = ctx.storage.emailDeliveries;
  const finish = async (status: 'sent' | 'skipped', reason?: string): Promise<EmailOutcome> => {
    await deliveries.finish(accountId, status, ctx.clock());
    return { ok: true, status, ...(reason ? { reason } : {}) };
  };
  const { customers, number } = account;
  const to = accountHolderEmail(customers);
  if (!ctx.config.SMTP_URL) {
    ctx.log.info({ account_number: number }, 'SMTP_URL not configured; migration e-mail skipped');
    return finish('skipped', 'smtp_not_configured');
  }
  if (!to) {
    ctx.log.info(
      { account_number: number },
      'account holder has no e-mail address; migration e-mail skipped',
    );
    return finish('skipped', 'no_address');
  }
  const holder = customers.find((c) => c.account_roles?.includes('ACCOUNT_HOLDER'));
  try {
    await sendMail(
      ctx.config.SMTP_URL,
      ctx.config.MAIL_FROM,
      migrationEmail(to, { givenName: holder?.given_name, accountNumber: number }),
    );
  } catch (err) {
    await deliveries.release(accountId);
    throw smtpFailure(err);
  }
  ctx.log.info({ account_number: number }, 'migration e-mail sent');
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
