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

let traceIds: (() => Record<string, string>) | undefined;

/**
 * Set once at start by tracing when it is on (src/infra/telemetry): every line logged within a trace then
 * carries its `trace_id` and `span_id`. Off, loggers have no mixin at all.
 */
export function logTraceIds(fields: () => Record<string, string>): void {
  traceIds = fields;
}

export function loggerOptions(level: string, name: string): LoggerOptions {
  return {
    level,
    ...(traceIds ? { mixin: traceIds } : {}),
    name,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'account-migration-import', proc: name },
    timestamp: () => `,"time":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }) },
  };
}
