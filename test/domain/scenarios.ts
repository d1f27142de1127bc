import {
  validateAccount,
  validateBillingDocumentsImport,
  validateCreateAccountRequest,
  validateNotesImport,
  validatePaymentInstruction,
  validateStatementsImport,
  validateTransactionsImport,
  type FieldError,
  type ValidationContext,
  type ValidationResult,
} from '../../src/domain/validation/index.js';
import type { RuleCode } from '../../src/domain/validation/rule-catalogue.js';
import {
  validAccountPayload,
  validBillingDocumentsImport,
  validCreateAccountRequest,
  validNotesImport,
  validPaymentInstruction,
  validStatementsImport,
  validTransactionsImport,
} from './fixtures.js';
import { deleteAt, setAt } from './json-path.js';

export const bodies = {
  account: { validate: validateAccount, build: validAccountPayload },
  notes: { validate: validateNotesImport, build: validNotesImport },
  transactions: { validate: validateTransactionsImport, build: validTransactionsImport },
  billingDocuments: { validate: validateBillingDocumentsImport, build: validBillingDocumentsImport },
  statements: { validate: validateStatementsImport, build: validStatementsImport },
  paymentInstruction: { validate: validatePaymentInstruction, build: validPaymentInstruction },
  createAccount: { validate: validateCreateAccountRequest, build: validCreateAccountRequest },
} satisfies Record<
  string,
  { validate: (input: unknown, ctx: ValidationContext) => ValidationResult<unknown>; build: () => object }
>;

export type BodyName = keyof typeof bodies;

/** A valid body with one edit that breaks exactly one rule, and the one error it must produce. */
export type Scenario = { body: BodyName; name: string; code: RuleCode; attr: string; input: () => unknown };

export type Edit = (payload: Record<string, unknown>) => void;
export const set =
  (path: string, value: unknown): Edit =>
  (p) =>
    setAt(p, path, value);
export const del =
  (path: string): Edit =>
  (p) =>
    deleteAt(p, path);

export function scenario(
  body: BodyName,
  code: RuleCode,
  attr: string,
  name: string,
  ...edits: Edit[]
): Scenario {
  return {
    body,
    name: `${code} (${name})`,
    code,
    attr,
    input: () => {
      const payload = bodies[body].build() as Record<string, unknown>;
      for (const edit of edits) edit(payload);
      return payload;
    },
  };
}

export function run(s: Scenario, ctx: ValidationContext): FieldError[] {
  const result = bodies[s.body].validate(s.input(), ctx);
  return result.ok ? [] : result.errors;
}
