import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from './errors.js';

/**
 * The router's limit on a path parameter's length. Its default (100) is below what the schemas accept (128 for
 * an external account number) and answers 414 in Fastify's own body; above this, the params schemas decide.
 */
export const MAX_PARAM_LENGTH = 1024;

const detail = z.string().describe('Human-readable; wording may change; do not parse.');
const code = z.string().describe('Machine-readable and stable; every code is listed in docs/error-codes.md.');
const requestId = z
  .string()
  .optional()
  .describe('On unexpected 5xx answers: the id to look for in the logs.');

/** The error body of every status but 400 (decisions §3): what went wrong, as a stable code. */
export const plainErrorBody = z.object({ detail, code, request_id: requestId });

/** The documented 400 body (decisions §3), for the OpenAPI document. */
export const errorBody = z.object({
  detail,
  code,
  errors: z
    .array(
      z.object({
        detail: z.string(),
        code: z.string().describe('A stable field error code, e.g. invalid_choice.'),
        attr: z
          .string()
          .describe('Dot path of the offending input (zero-based indexes), or non_field_errors.'),
      }),
    )
    .optional()
    .describe('Present on every 400 (possibly empty): every problem found, sorted by attr.'),
  external_account_number: z.string().optional().describe('On account_import_process_already_imported.'),
  kraken_account_number: z.string().optional().describe('On account_import_process_already_imported.'),
  domain: z
    .string()
    .optional()
    .describe('v2 scheduling only: the platform domain of the refusal (`import_process`).'),
});

const meaning = {
  400: 'Validation errors or a business rule refused the request (see `code`).',
  401: 'Missing, malformed, expired or revoked token: not_authenticated, token_expired or invalid_token.',
  404: 'Not found: the supplier, the account or the import process (see `code`), or no such route.',
  413: 'The body is larger than the deployment allows (payload_too_large).',
  415: 'The body is not sent as application/json (unsupported_media_type).',
  429: 'Too many accounts are being created at once (concurrency_limit_exceeded; see Retry-After).',
  500: 'Unexpected error (internal_error, with request_id), or vendor_unavailable on payment instructions.',
  503: 'A backing service is unavailable (service_unavailable; see Retry-After).',
} as const;

export type ErrorStatus = keyof typeof meaning;

/** An example body per status, with the catalogue's own wording (the generated placeholder would be "string"). */
const exampleCodes: Record<ErrorStatus, ErrorCode> = {
  400: 'request_failed_validation',
  401: 'not_authenticated',
  404: 'import_supplier_not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'concurrency_limit_exceeded',
  500: 'internal_error',
  503: 'service_unavailable',
};

function exampleBody(status: ErrorStatus): Record<string, unknown> {
  const code = exampleCodes[status];
  const body: Record<string, unknown> = { detail: errorCatalogue[code].detail, code };
  if (status === 400)
    body.errors = [{ detail: 'This field is required.', code: 'required', attr: 'billing_postcode' }];
  if (status === 500) body.request_id = '3f1c2b9e-5d4a-4c1e-9a7b-2e8f6d0c1a55';
  return body;
}

/** The error answers of an operation, each with the error body and what the status means there. */
export function errorResponses(
  statuses: readonly ErrorStatus[],
  overrides: Partial<Record<ErrorStatus, string>> = {},
): Partial<Record<ErrorStatus, typeof errorBody | typeof plainErrorBody>> {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      (status === 400 ? errorBody : plainErrorBody)
        .describe(overrides[status] ?? meaning[status])
        .meta({ examples: [exampleBody(status)] }),
    ]),
  ) as Partial<Record<ErrorStatus, typeof errorBody | typeof plainErrorBody>>;
}

/** Every operation behind a token can answer these. */
export const commonErrors = [401, 500, 503] as const;
/** And every one that takes a JSON body these. */
export const bodyErrors = [400, 413, 415] as const;

/** v2's refusal of a schedule for an account already imported: the platform's own shape, kept exactly. */
export const v2AlreadyImportedBody = z.object({
  non_field_errors: z.object({ detail, code: z.literal('account_import_process_already_imported') }),
  account_id: z.string().describe('The Kraken account number of the imported account.'),
});
