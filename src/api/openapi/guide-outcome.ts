import { EXAMPLE_ACCOUNT, EXAMPLE_SUPPLIER } from './account-example.js';
import { EXAMPLE_V2_ACCOUNT } from './examples.js';

// The demo data as the guide's examples leave it (docs/api.md, sent in workflow order after ./scripts/up.sh):
// the numbers the service gave the two example accounts, the demo supplier's progress, and what reconciliation
// reads of both accounts. The answer examples (answers.ts) show it.

/** The demo supplier's progress as the guide's story leaves it (the supplier list shows it without failures). */
export const demoProgressSummary = {
  import_supplier_code: 'DEMO',
  status: 'Ongoing',
  as_of: '2026-11-24T00:13:00Z',
  rebuilding: false,
  accounts: {
    total: 2,
    PENDING: 0,
    IN_PROGRESS: 0,
    PROCESSED: 2,
    ERRORED: 0,
    CANCELLED: 0,
    DRY_RUN_SUCCEEDED: 0,
    DRY_RUN_ERRORED: 0,
  },
  skipped: 0,
  processed_per_minute: { last_1m: 1, last_5m: 0.4, last_15m: 0.1 },
  eta_seconds: 0,
  creation_slots: { in_use: 0, share: 50, limit: 50, waiting: 0 },
};

/** The number the v1 create answers in the examples (each run gives another). */
export const EXAMPLE_ACCOUNT_NUMBER = 'A-F0F1DEBA';
/** The number of the account the v2 examples schedule. */
export const EXAMPLE_V2_ACCOUNT_NUMBER = 'A-3B7C91D2';

// What reconciliation reads of both accounts once the guide's examples have run (the v1 account with every
// post-import example, the v2 one as scheduled).
const RECONCILED_AT = '2026-11-24T00:13:00Z';
export const reconciledV1 = {
  import_supplier_code: EXAMPLE_SUPPLIER,
  external_account_number: EXAMPLE_ACCOUNT,
  kraken_account_number: EXAMPLE_ACCOUNT_NUMBER,
  as_of: RECONCILED_AT,
  ledgers: [
    {
      ledger_code: 'ELECTRICITY',
      balance: '-7.50',
      last_statement_balance: '-54.06',
      last_statement_closing_date: '2025-03-31',
      transactions: {
        count: 24,
        digest: '827df7466ade2294901f56d2e934eeb19ed7e6e26dfaa4618de987c1945a8c61',
        by_origin: {
          historical_statement: 13,
          current_statement: 8,
          imported: 3,
          billing_document: 0,
          additional_historical: 0,
        },
      },
      billing_documents: 0,
    },
    {
      ledger_code: 'GAS',
      balance: '-12.10',
      last_statement_balance: '-37.61',
      last_statement_closing_date: '2025-03-31',
      transactions: {
        count: 23,
        digest: '3d2e76b7d3852d2fd75d6ae374e200c4927bda04e2e15a24dccc5df9164b1374',
        by_origin: {
          historical_statement: 13,
          current_statement: 8,
          imported: 0,
          billing_document: 1,
          additional_historical: 1,
        },
      },
      billing_documents: 1,
    },
  ],
  statements: 2,
  notes: 4,
  payment_instruction: {
    vendor: 'SIMULATED',
    status: 'ACTIVE',
  },
};
export const reconciledV2 = {
  import_supplier_code: EXAMPLE_SUPPLIER,
  external_account_number: EXAMPLE_V2_ACCOUNT,
  kraken_account_number: EXAMPLE_V2_ACCOUNT_NUMBER,
  as_of: RECONCILED_AT,
  ledgers: [
    {
      ledger_code: 'ELECTRICITY',
      balance: '-12.10',
      last_statement_balance: '-54.06',
      last_statement_closing_date: '2025-03-31',
      transactions: {
        count: 21,
        digest: 'afc17be8848e26e871cc0a73d2f933f19df8cec1a6fe8b7e82f3792f76a1321b',
        by_origin: {
          historical_statement: 13,
          current_statement: 8,
          imported: 0,
          billing_document: 0,
          additional_historical: 0,
        },
      },
      billing_documents: 0,
    },
    {
      ledger_code: 'GAS',
      balance: '-12.10',
      last_statement_balance: '-37.61',
      last_statement_closing_date: '2025-03-31',
      transactions: {
        count: 21,
        digest: '46aa0b7ff01cdb7ca85e59feb4894d1511f6433d0387d688d6d1c8f1400b7dc1',
        by_origin: {
          historical_statement: 13,
          current_statement: 8,
          imported: 0,
          billing_document: 0,
          additional_historical: 0,
        },
      },
      billing_documents: 0,
    },
  ],
  statements: 1,
  notes: 1,
  payment_instruction: null,
};
