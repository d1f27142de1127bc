import { pauseDetails } from '../../domain/cutover/plan.js';
import type { CreationOutcome } from './from-process.js';
import type { Admission } from '../cutover/plan-gate.js';

/** Outcomes that finished no account: the plan's counts and breaker leave them out. */
const NOT_FINISHED = new Set([
  'task_superseded',
  'account_import_process_already_imported',
  'import_process_does_not_exist',
  'account_import_in_progress',
]);

/** How a creation's end counts for its plan: PROCESSED, an account that errored (its code), or neither. */
export function creationOutcomeOf(outcome: CreationOutcome | 'failed'): ['ok' | 'error' | 'none', string] {
  if (outcome === 'failed') return ['error', 'account_creation_failed'];
  if (outcome.ok) return ['ok', ''];
  if (NOT_FINISHED.has(outcome.code)) return ['none', ''];
  return ['error', outcome.code];
}

const notNow: Record<string, string> = {
  before_window: "the plan's window has not started",
  window_ended: "the plan's window has ended (declare the plan again with a new window)",
  canary: "the plan's canary accounts are being created; the cohort then waits for approval",
};

/** A v1 create refused by its supplier's plan: 400 `import_supplier_migration_not_ongoing`, naming why. */
export function planRefusal(
  supplier: string,
  admission: Exclude<Admission, { admitted: true }>,
): Extract<CreationOutcome, { ok: false; detail?: string }> {
  const why = admission.paused
    ? `paused (${admission.reason}): ${pauseDetails[admission.reason as keyof typeof pauseDetails]}`
    : `held back: ${notNow[admission.reason]}`;
  return {
    ok: false,
    code: 'import_supplier_migration_not_ongoing',
    detail: `Migrations for import supplier ${supplier} are ${why}.`,
  };
}
