import { error, fieldError } from './answer-bodies.js';
import { EXAMPLE_SUPPLIER } from './account-example.js';

/** The guide's cohort plan of DEMO (docs/api.md, Cohort plan), as declared, then paused by an operator. */
const demoPlan = {
  import_supplier_code: EXAMPLE_SUPPLIER,
  expected_accounts: 2000,
  schedule_window_start: null,
  schedule_window_end: null,
  canary_accounts: 50,
  breaker: { error_percent: 5, over_accounts: 200 },
  status: 'ACTIVE',
  pause: null,
  canary_approved: false,
  counts: { processed: 0, errored: 0, in_flight: 0 },
  updated_at: '2026-11-24T00:13:00Z',
};
const demoPlanPaused = {
  ...demoPlan,
  status: 'PAUSED',
  pause: {
    reason: 'operator',
    detail: 'Waiting for the billing freeze',
    since: '2026-11-24T00:13:05Z',
    codes: [],
  },
};

/** The answers of the cohort plan's operations, by operationId and status. */
export const planAnswers: Record<string, Record<string, unknown>> = {
  putCohortPlan: {
    200: demoPlan,
    400: fieldError('request_failed_validation', [
      { detail: 'This field is required.', code: 'required', attr: 'expected_accounts' },
    ]),
    404: error('import_supplier_not_found'),
  },
  getCohortPlan: { 200: demoPlanPaused, 404: error('import_supplier_not_found') },
  pauseCohortPlan: { 200: demoPlanPaused, 404: error('import_supplier_not_found') },
  resumeCohortPlan: { 200: demoPlan, 404: error('import_supplier_not_found') },
};
