import type { LoggerOptions } from 'pino';

/** Paths that may carry secrets or personal data; pino replaces their values before a line is written. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.APIKey',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.refreshToken',
  '*.password',
  '*.email',
  '*.mobile',
  '*.landline',
  '*.given_name',
  '*.family_name',
  '*.billing_name',
  '*.fiscal_code',
  'body',
  'payload',
];

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    name,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'account-migration-import', proc: name },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }) },
  };
}
