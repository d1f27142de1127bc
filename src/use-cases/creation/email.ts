import nodemailer, { type Transporter } from 'nodemailer';

export type MigrationEmail = { to: string; subject: string; text: string };

const transports = new Map<string, Transporter>();

/** One pooled SMTP transport per URL for the whole process. */
function transportFor(smtpUrl: string): Transporter {
  let transport = transports.get(smtpUrl);
  if (!transport) {
    transport = nodemailer.createTransport(smtpUrl);
    transports.set(smtpUrl, transport);
  }
  return transport;
}

export async function sendMail(smtpUrl: string, from: string, mail: MigrationEmail): Promise<void> {
  await transportFor(smtpUrl).sendMail({ from, ...mail });
}

export function closeMailTransports(): void {
  for (const t of transports.values()) t.close();
  transports.clear();
}

export function migrationEmail(
  to: string,
  details: { givenName?: string; accountNumber: string },
): MigrationEmail {
  const greeting = details.givenName ? `Hello ${details.givenName},` : 'Hello,';
  return {
    to,
    subject: `Your account has moved: ${details.accountNumber}`,
    text: [
      greeting,
      '',
      `Your energy account has been migrated to our platform. Your new account number is ${details.accountNumber}.`,
      'Nothing changes in your supply, and you do not need to do anything.',
    ].join('\n'),
  };
}
