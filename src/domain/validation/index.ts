import { z } from 'zod';
import { accountPayloadSchema, type AccountPayload } from '../../schemas/account.js';
import { v2EnvelopeSchema, v2ScheduleEnvelopeSchema } from '../../schemas/v2.js';

type V2Envelope = z.output<typeof v2EnvelopeSchema>;
import {
  billingDocumentsImportSchema,
  createAccountRequestSchema,
  notesImportSchema,
  paymentInstructionSchema,
  statementsImportSchema,
  transactionsImportSchema,
  type BillingDocumentsImport,
  type CreateAccountRequest,
  type NotesImport,
  type PaymentInstruction,
  type StatementsImport,
  type TransactionsImport,
} from '../../schemas/post-import.js';
import { getRegionProfile } from '../region/index.js';
import type { Catalogue } from '../../vocabulary/catalogue.js';
import { Findings, sortErrors, type FieldError } from './field-error.js';
import { checkAccount } from './rules/account.js';
import type { RuleEnv } from './rules/env.js';
import {
  checkBillingDocumentsImport,
  checkNotesImport,
  checkPaymentInstruction,
  checkStatementsImport,
  checkTransactionsImport,
} from './rules/post-import.js';
import { parsedWhole, salvage, type Loose } from './salvage.js';
import { issuesToFieldErrors } from './zod-issues.js';

export type { FieldError } from './field-error.js';
export { ruleCatalogue, type RuleCode } from './rule-catalogue.js';

export type ValidationContext = { region: string; catalogue: Catalogue; today: string /* YYYY-MM-DD */ };
export type ValidationResult<T> = { ok: true; data: T } | { ok: false; errors: FieldError[] };

type Rules<T> = (env: RuleEnv, data: Loose<T>) => void;

const compiledSchemas = new WeakMap<z.ZodType, z.ZodType>();

// z.compile generates a parser for the valid path (several times faster on a large account) and hands
// any failing input to the ordinary parser, so issues and error paths are the runtime's own.
function compiled<S extends z.ZodType>(schema: S): S {
  let fast = compiledSchemas.get(schema);
  if (!fast) {
    fast = z.compile(schema);
    compiledSchemas.set(schema, fast);
  }
  return fast as S;
}

/**
 * Schema first, then the rules. When the schema fails, the rules still run on every part that parsed on
 * its own, so one response lists every problem. Throws only for an unknown `ctx.region` (configuration).
 */
function validate<S extends z.ZodType>(
  schema: S,
  rules: Rules<z.output<S>>,
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<z.output<S>> {
  const region = getRegionProfile(ctx.region);
  const parsed = compiled(schema).safeParse(input);
  const view = parsed.success ? parsedWhole(parsed.data) : salvage(schema, input);
  const out = new Findings();
  if (view.data !== undefined && typeof view.data === 'object') {
    rules(
      { out, region, catalogue: ctx.catalogue, today: ctx.today, isComplete: view.isComplete },
      view.data,
    );
  }
  const schemaErrors = parsed.success ? [] : issuesToFieldErrors(parsed.error.issues, input);
  if (parsed.success && out.errors.length === 0) return { ok: true, data: parsed.data };
  return { ok: false, errors: sortErrors([...schemaErrors, ...out.errors]) };
}

const noRules = (): void => {};

/** Validate-account and staging. `data`: strings trimmed, amounts as exact decimal strings (money with 2 places). */
export function validateAccount(input: unknown, ctx: ValidationContext): ValidationResult<AccountPayload> {
  return validate(accountPayloadSchema, checkAccount, input, ctx);
}

/**
 * An account known to have passed `validateAccount` on the same terms (same code, catalogue, region and day:
 * see `creation/validation-fingerprint.ts`): only parsed, for the normalised data, without the rules. Should
 * it not parse after all, it is validated in full, so the answer is `validateAccount`'s either way.
 */
export function parseValidatedAccount(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<AccountPayload> {
  const parsed = compiled(accountPayloadSchema).safeParse(input);
  return parsed.success ? { ok: true, data: parsed.data } : validateAccount(input, ctx);
}

export function validateNotesImport(input: unknown, ctx: ValidationContext): ValidationResult<NotesImport> {
  return validate(notesImportSchema, checkNotesImport, input, ctx);
}

export function validateTransactionsImport(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<TransactionsImport> {
  return validate(transactionsImportSchema, checkTransactionsImport, input, ctx);
}

export function validateBillingDocumentsImport(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<BillingDocumentsImport> {
  return validate(billingDocumentsImportSchema, checkBillingDocumentsImport, input, ctx);
}

export function validateStatementsImport(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<StatementsImport> {
  return validate(statementsImportSchema, checkStatementsImport, input, ctx);
}

export function validatePaymentInstruction(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<PaymentInstruction> {
  return validate(paymentInstructionSchema, checkPaymentInstruction, input, ctx);
}

/** The v2 envelope (`payload` an object, `task_params` well-formed); the account is validated on its own. */
export function validateV2Envelope(
  input: unknown,
  ctx: ValidationContext,
  options: { taskParamsRequired: boolean },
): ValidationResult<V2Envelope> {
  return validate(
    options.taskParamsRequired ? v2ScheduleEnvelopeSchema : v2EnvelopeSchema,
    noRules,
    input,
    ctx,
  );
}

export function validateCreateAccountRequest(
  input: unknown,
  ctx: ValidationContext,
): ValidationResult<CreateAccountRequest> {
  return validate(createAccountRequestSchema, noRules, input, ctx);
}
