import { taskWindow, type TaskWindow } from '../../domain/import-process/window.js';
import { migrationRefusal, type MigrationRefusal } from '../../domain/supplier.js';
import { sortErrors, type FieldError } from '../../domain/validation/field-error.js';
import {
  validateAccount,
  validateV2Envelope,
  type ValidationContext,
} from '../../domain/validation/index.js';
import type { AccountPayload } from '../../schemas/account.js';
import type { Storage } from '../../storage/index.js';
import type { Supplier } from '../../storage/records/suppliers.js';
import { scheduleAccount, type ScheduleOutcome, type TaskQueue } from './schedule.js';
import { validationFingerprint } from './validation-fingerprint.js';

/**
 * The v2 data import's validate and schedule (`POST /v2/data-import/accounts/[validate/]`): the envelope, the
 * account (by the v1 rules, at its v1 paths) and the task parameters (at `task_params.<field>`) checked at
 * once, then, for a schedule, the supplier's and the team's consent before the task is recorded
 * (`scheduleAccount`). Outcomes are returned; the routes turn them into HTTP.
 */

/** A v2 request that passed every check. */
export type CheckedRequest = {
  supplier: Supplier;
  /** The account as received (a JSON object), staged as it is. */
  payload: Record<string, unknown>;
  data: AccountPayload;
  /** The fingerprint of the account's validation (see `validation-fingerprint.ts`). */
  validatedWith: string;
  dryRun: boolean;
  /** The task's window: always there for a schedule; for a validation, only when task parameters are given. */
  window: TaskWindow | null;
};

export type CheckOutcome = { ok: true; request: CheckedRequest } | { ok: false; errors: FieldError[] };

export type CheckInput = {
  body: unknown;
  /** The caller's supplier named by the payload's `import_supplier` (`supplierCodeOf`), or null: none. */
  supplier: Supplier | null;
  /** The validation context of that supplier (its region), or the default one. */
  context: ValidationContext;
  now: Date;
  /** A schedule (task parameters required, a window always made) rather than a validation. */
  scheduling: boolean;
};

/** The account the body carries: only a JSON object is one (anything else is refused at `payload`). */
function payloadOf(body: unknown): Record<string, unknown> | undefined {
  const candidate = isObject(body) ? body.payload : undefined;
  return isObject(candidate) ? candidate : undefined;
}

/** The supplier code the body's account names, to look the caller's supplier up by. */
export function supplierCodeOf(body: unknown): unknown {
  return payloadOf(body)?.import_supplier;
}

/** Envelope, account and window, every error at once (in the documented order); the supplier must exist. */
export function checkRequest(input: CheckInput): CheckOutcome {
  const { body, supplier, context, scheduling } = input;
  const payload = payloadOf(body);
  const code = payload?.import_supplier;
  const envelope = validateV2Envelope(body, context, { taskParamsRequired: scheduling });
  const errors: FieldError[] = envelope.ok ? [] : envelope.errors;
  const account = payload ? validateAccount(payload, context) : null;
  if (account && !account.ok) errors.push(...account.errors);
  if (account && !supplier && typeof code === 'string' && code.length > 0) {
    errors.push({
      detail: `Import supplier ${code.slice(0, 64)} does not exist.`,
      code: 'import_supplier_not_found',
      attr: 'import_supplier',
    });
  }
  const params = envelope.ok ? envelope.data.task_params : undefined;
  const window = params || scheduling ? taskWindow(params ?? {}, input.now) : null;
  if (window && !window.ok) errors.push(...window.errors);
  if (errors.length > 0 || !payload || !account?.ok || !supplier || (window && !window.ok))
    return { ok: false, errors: sortErrors(errors) };
  return {
    ok: true,
    request: {
      supplier,
      payload,
      data: account.data,
      validatedWith: validationFingerprint(context),
      dryRun: params?.is_dry_run === true,
      window: window && window.ok ? window.window : null,
    },
  };
}

export type ScheduledCreationOutcome =
  | ScheduleOutcome
  /** The supplier does not accept migrations. */
  | { status: 'refused'; refusal: MigrationRefusal }
  /** No team: the payload names none and the supplier has no default, or the named team does not exist. */
  | { status: 'operations_team_should_be_provided' | 'operations_team_name_does_not_exist' };

/**
 * Schedules the checked request's creation: refused when the supplier does not accept migrations or the team
 * is unknown (nothing is staged then), else staged and its task recorded (see `scheduleAccount`).
 */
export async function scheduleCreation(
  deps: { storage: Storage; tasks: TaskQueue; clock: () => Date },
  request: CheckedRequest,
): Promise<ScheduledCreationOutcome> {
  const { supplier, data } = request;
  const refusal = migrationRefusal(supplier);
  if (refusal) return { status: 'refused', refusal };
  const team = await teamFor(deps.storage, supplier, data);
  if (team.status !== 'found') return team;
  return scheduleAccount(deps.storage, deps.tasks, {
    organisationId: supplier.organisationId,
    importSupplier: supplier.code,
    externalAccountNumber: data.external_account_number,
    payload: JSON.stringify(request.payload),
    validatedWith: request.validatedWith,
    now: deps.clock(),
    task: { ...request.window!, dryRun: request.dryRun, operationsTeamId: team.id },
  });
}

/** The payload's team, else the supplier's default; a named team must exist. */
async function teamFor(
  storage: Storage,
  supplier: Supplier,
  data: AccountPayload,
): Promise<
  | { status: 'found'; id: string }
  | { status: 'operations_team_should_be_provided' | 'operations_team_name_does_not_exist' }
> {
  if (data.operations_team_name !== undefined) {
    const id = await storage.suppliers.teamIdByName(data.operations_team_name);
    return id ? { status: 'found', id } : { status: 'operations_team_name_does_not_exist' };
  }
  if (supplier.defaultOperationsTeamId)
    return { status: 'found', id: supplier.defaultOperationsTeamId.toHexString() };
  return { status: 'operations_team_should_be_provided' };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
