import { defaultCatalogue, defaultCatalogueValues } from '../../vocabulary/catalogue.js';
import { validateAccount } from '../../domain/validation/index.js';
import { EXAMPLE_ACCOUNT, EXAMPLE_SUPPLIER } from './account-example.js';
import { EXAMPLE_V2_ACCOUNT, examples } from './examples.js';
import {
  demoProgressSummary,
  EXAMPLE_ACCOUNT_NUMBER,
  EXAMPLE_V2_ACCOUNT_NUMBER,
  reconciledV1,
  reconciledV2,
} from './guide-outcome.js';
import { timelineExample } from './timeline-example.js';
import { error, fieldError } from './answer-bodies.js';
import { planAnswers } from './plan-answers.js';

const { creation_slots: _slots, ...withoutSlots } = demoProgressSummary;
void _slots;

// What the service answers to the request examples (examples.ts), sent in workflow order after ./scripts/up.sh:
// the answer examples of the OpenAPI document, by operationId and status, so that Swagger shows real answers
// instead of placeholders generated from the schemas ("string"). The success answers are docs/api.md's too (a
// test finds each in the guide, whose examples another test runs against the service). Error answers not
// listed here keep the generic example of their status (errorResponses in ../schemas.ts).

/** The validated account, as validate-account answers it (the example's dates are all in the past). */
export function validatedAccountExample(): unknown {
  const today = new Date().toISOString().slice(0, 10);
  const result = validateAccount(examples.account, { region: 'ES', catalogue: defaultCatalogue, today });
  if (!result.ok) throw new Error(`the account example is invalid: ${JSON.stringify(result.errors)}`);
  return result.data;
}

/** A path parameter longer than the schemas allow. */
const tooLong = (attr: string) =>
  fieldError('request_failed_validation', [
    { detail: 'Too big: expected string to have <=128 characters', code: 'invalid', attr },
  ]);
const badLimit = fieldError('request_failed_validation', [
  { detail: 'Too small: expected number to be >=1', code: 'invalid', attr: 'limit' },
]);
const accountNotFound = error('account_not_found');
const alreadyImported = error('account_import_process_already_imported', {
  errors: [],
  external_account_number: EXAMPLE_ACCOUNT,
  kraken_account_number: EXAMPLE_ACCOUNT_NUMBER,
});

const staged = { import_supplier: EXAMPLE_SUPPLIER, external_account_number: EXAMPLE_ACCOUNT };
const transactionResults = {
  results: examples.transactions.transactions.map((transaction) => ({
    status: 'TRANSACTION_ADDED_TO_ACCOUNT',
    transaction_data: transaction,
  })),
};
const imported = [
  {
    external_account_number: EXAMPLE_ACCOUNT,
    kraken_account_number: EXAMPLE_ACCOUNT_NUMBER,
    account_created_at: '2026-11-23T21:51:25Z',
  },
];
const processed = {
  status: 'PROCESSED',
  kraken_identifier: EXAMPLE_V2_ACCOUNT_NUMBER,
  created_at: '2026-11-24T00:10:02Z',
  modified_at: '2026-11-24T00:10:03Z',
  latest_event: {
    event: 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
    occurred_at: '2026-11-24T00:10:03Z',
    data: { kraken_account_number: EXAMPLE_V2_ACCOUNT_NUMBER },
  },
  latest_error: null,
};
const v2NotFound = error('not_found');

export const answers: Record<string, Record<string, unknown>> = {
  obtainToken: {
    200: {
      data: {
        obtainKrakenToken: {
          token:
            'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJha2lkIjoiNmIwNGI1NWM4NzgxMmIyYjUyNDAwZWNkIiwidHlwIjoiYWNjZXNzIiwic3ViIjoiNmIwNGI1NWM4NzgxMmIyYjUyNDAwZWNjIiwiaXNzIjoiYWNjb3VudC1taWdyYXRpb24taW1wb3J0IiwiaWF0IjoxNzk1NDcwNjg1LCJleHAiOjE3OTU0NzQyODV9.VYEsdpAAWiWUzcioTbHUKfDWTuz5rjGvflcaM7thlFw',
          payload: {
            sub: '6b04b55c87812b2b52400ecc',
            akid: '6b04b55c87812b2b52400ecd',
            typ: 'access',
            iat: 1795470685,
            exp: 1795474285,
            iss: 'account-migration-import',
          },
          refreshToken:
            'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJha2lkIjoiNmIwNGI1NWM4NzgxMmIyYjUyNDAwZWNkIiwidHlwIjoicmVmcmVzaCIsInN1YiI6IjZiMDRiNTVjODc4MTJiMmI1MjQwMGVjYyIsImlzcyI6ImFjY291bnQtbWlncmF0aW9uLWltcG9ydCIsImlhdCI6MTc5NTQ3MDY4NSwiZXhwIjoxNzk2MDc1NDg1fQ._z05500fKOvhHLI070ssI3GHx7LFQfMd0gFJezmJ9OA',
          refreshExpiresIn: 1796075485,
        },
      },
    },
    400: {
      data: null,
      errors: [
        { message: 'Syntax Error: Expected Name, found <EOF>.', locations: [{ line: 1, column: 11 }] },
      ],
    },
    415: { data: null, errors: [{ message: 'Unsupported Media Type' }] },
  },
  validateAccount: {
    200: validatedAccountExample(),
    400: fieldError('account_failed_validation', [
      {
        detail: '"LANDLORD" is not a valid choice for account_type; expected one of DOMESTIC, BUSINESS.',
        code: 'invalid_choice',
        attr: 'account_type',
      },
      { detail: 'This field is required.', code: 'required', attr: 'billing_postcode' },
    ]),
  },
  stageAccount: { 200: staged, 201: staged, 400: alreadyImported },
  createAccount: {
    201: { kraken_account_number: EXAMPLE_ACCOUNT_NUMBER },
    400: alreadyImported,
    503: error('account_creation_pending'),
  },
  importNotes: {
    201: [
      {
        created_at: examples.notes.notes[0].created_at,
        body: examples.notes.notes[0].body,
        is_pinned: true,
        unpin_at: examples.notes.notes[0].unpin_at,
        status: 'NOTE_CREATION_SUCCESS',
      },
      {
        created_at: '2026-11-23T21:51:25Z',
        body: '',
        document_paths: examples.notes.notes[1].document_paths,
        status: 'NOTE_CREATION_SUCCESS',
      },
    ],
    400: fieldError('request_failed_validation', [
      {
        detail: 'A note needs a body or document_paths.',
        code: 'note_body_or_document_path_not_found',
        attr: 'notes.0',
      },
    ]),
    404: accountNotFound,
  },
  importTransactions: {
    200: transactionResults,
    201: transactionResults,
    400: {
      status: 'TRANSACTION_IMPORT_ERROR',
      error_detail:
        'Transaction E-OLD-1 is dated 2025-02-10, before the open statement period of ledger ELECTRICITY, which starts on 2025-04-01.',
      transaction_data: {
        transaction_id: 'E-OLD-1',
        transaction_date: '2025-02-10',
        amount: '4.00',
        type: 'CHARGE',
        reason: 'IMPORTED_CHARGE',
      },
    },
    404: accountNotFound,
  },
  importHistoricalBillingDocuments: {
    400: error('ledger_has_finalized_billing_document', { errors: [] }),
    404: accountNotFound,
  },
  importHistoricalStatements: {
    201: examples.statements,
    400: fieldError('historical_statement_already_exists', [
      {
        detail: 'Statement ST-2025-03 already exists on the account.',
        code: 'historical_statement_already_exists',
        attr: 'statements.0.statement_id',
      },
    ]),
    404: accountNotFound,
  },
  createPaymentInstruction: {
    201: {
      kraken_account_number: EXAMPLE_ACCOUNT_NUMBER,
      reference: examples.paymentInstruction.reference,
      status: 'PAYMENT_INSTRUCTION_CREATED',
    },
    400: error('account_has_active_payment_instruction', { errors: [] }),
    404: accountNotFound,
    500: error('vendor_unavailable'),
  },
  getAccountImportStatus: {
    200: { status: 'COMPLETED', kraken_account_number: EXAMPLE_ACCOUNT_NUMBER },
    400: tooLong('external'),
    404: error('import_process_not_found'),
  },
  listAllAccountImportProcesses: { 200: imported, 400: badLimit },
  listPendingAccountImportProcesses: {
    200: [
      { external_account_number: EXAMPLE_V2_ACCOUNT, kraken_account_number: null, account_created_at: null },
    ],
    400: badLimit,
  },
  listImportedAccountImportProcesses: { 200: imported, 400: badLimit },
  validateScheduledAccount: {
    400: fieldError('account_failed_validation', [
      { detail: 'This field is required.', code: 'required', attr: 'billing_postcode' },
    ]),
  },
  scheduleAccountCreation: {
    400: error('import_process_failed_validation', {
      domain: 'import_process',
      errors: [
        {
          code: 'schedule_window_start_in_past',
          attr: 'task_params.schedule_window_start',
          detail: 'The schedule window cannot start in the past.',
        },
      ],
    }),
  },
  getAccountImportProcess: { 200: processed, 400: tooLong('external_account_number'), 404: v2NotFound },
  cancelScheduledCreation: {
    200: {
      status: 'CANCELLED',
      kraken_identifier: null,
      created_at: '2026-11-24T00:10:02Z',
      modified_at: '2026-11-24T00:12:40Z',
      latest_event: {
        event: 'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        occurred_at: '2026-11-24T00:12:40Z',
        data: {},
      },
      latest_error: null,
    },
    400: error('import_process_not_cancellable', { errors: [] }),
    404: v2NotFound,
  },
  getCohortProgress: {
    // The body's order: the summary's fields, then failures and post-import items, then the creation slots.
    200: {
      ...withoutSlots,
      failures: [],
      post_import: {
        notes: 2,
        transactions: 3,
        statements: 1,
        billing_documents: 1,
        payment_instructions: 1,
      },
      creation_slots: demoProgressSummary.creation_slots,
      plan: null,
    },
    404: error('import_supplier_not_found'),
  },
  ...planAnswers,
  listImportSuppliers: {
    200: {
      results: [demoProgressSummary],
    },
  },
  getCohortProgressPerMinute: {
    200: {
      import_supplier_code: 'DEMO',
      as_of: '2026-11-24T00:13:00Z',
      minutes: [
        { minute: '2026-11-24T00:12:00Z', processed: 0, errored: 0 },
        { minute: '2026-11-24T00:13:00Z', processed: 2, errored: 0 },
      ],
    },
    400: fieldError('request_failed_validation', [
      { detail: 'Too big: expected number to be <=60', code: 'invalid', attr: 'minutes' },
    ]),
    404: error('import_supplier_not_found'),
  },
  listCohortAccounts: {
    200: {
      results: [
        {
          external_account_number: 'ACC-2025-000123',
          status: 'PROCESSED',
          kraken_identifier: EXAMPLE_ACCOUNT_NUMBER,
          latest_error: null,
          error_paths: [],
          modified_at: '2026-11-24T00:10:01Z',
        },
        {
          external_account_number: 'ACC-2025-000124',
          status: 'PROCESSED',
          kraken_identifier: EXAMPLE_V2_ACCOUNT_NUMBER,
          latest_error: null,
          error_paths: [],
          modified_at: '2026-11-24T00:10:03Z',
        },
      ],
      next: null,
    },
    404: error('import_supplier_not_found'),
  },
  listAccountImportEvents: {
    200: [
      { event: 'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED', occurred_at: '2026-11-24T00:10:02Z', data: {} },
      {
        event: 'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
        occurred_at: '2026-11-24T00:10:02Z',
        data: {
          schedule_window_start: '2026-11-24T00:10:02Z',
          schedule_window_end: '2026-11-28T00:10:02Z',
          is_dry_run: false,
        },
      },
      // A scheduled task's STARTED names the position of the SCHEDULED event whose task started.
      {
        event: 'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED',
        occurred_at: '2026-11-24T00:10:03Z',
        data: { task: 1 },
      },
      {
        event: 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED',
        occurred_at: '2026-11-24T00:10:03Z',
        data: { kraken_account_number: EXAMPLE_V2_ACCOUNT_NUMBER },
      },
    ],
    400: tooLong('external_account_number'),
    404: v2NotFound,
  },
  getAccountTimeline: { 200: timelineExample, 404: v2NotFound },
  getAccountReconciliation: {
    200: reconciledV1,
    400: tooLong('external_account_number'),
    404: error('account_not_found'),
  },
  reconcileAccounts: {
    200: {
      results: [
        reconciledV1,
        reconciledV2,
        { external_account_number: 'ACC-2025-000999', error: { code: 'not_found' } },
      ],
    },
    400: fieldError('too_many_items', [
      {
        detail: 'Ensure this list has no more than 500 items.',
        code: 'too_many_items',
        attr: 'external_account_numbers',
      },
    ]),
    404: error('import_supplier_not_found'),
  },
  // After ./scripts/up.sh: the default lists, and SIMULATED, the vendor it enables that needs no key.
  getCatalogue: { 200: { ...defaultCatalogueValues, payment_instruction_vendor: ['SIMULATED'] } },
};
