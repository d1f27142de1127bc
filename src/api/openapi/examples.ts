import type { ZodType } from 'zod';
import { EXAMPLE_ACCOUNT, EXAMPLE_SUPPLIER, EXAMPLE_TEAM, exampleAccount } from './account-example.js';

/** The account the v2 examples schedule. */
export const EXAMPLE_V2_ACCOUNT = 'ACC-2025-000124';

// One complete request example per operation, in workflow order: each is valid on the account the ones
// before it created (a test sends them all, in this order, to a running service). They are the examples of
// docs/api.md too, on the demo data ./scripts/up.sh seeds (test/api/docs-examples.test.ts runs the guide's).

const account = { import_supplier: EXAMPLE_SUPPLIER, external_account_number: EXAMPLE_ACCOUNT };

export const examples = {
  account: exampleAccount(),
  createAccount: {
    external_account_number: EXAMPLE_ACCOUNT,
    import_supplier_code: EXAMPLE_SUPPLIER,
    operations_team_name: EXAMPLE_TEAM,
    dry_run: false,
  },
  notes: {
    ...account,
    notes: [
      {
        body: 'El cliente pide recibir las facturas solo por correo electrónico.',
        created_at: '2025-07-01T09:15:00Z',
        is_pinned: true,
        unpin_at: '2025-10-01T00:00:00Z',
      },
      { document_paths: [{ document_path: `letters/2025/07/${EXAMPLE_ACCOUNT}-welcome.pdf` }] },
    ],
  },
  transactions: {
    ...account,
    ledger_code: 'ELECTRICITY',
    transactions: [
      {
        transaction_id: 'E-PI-2025-07-P',
        transaction_date: '2025-07-04',
        amount: '12.10',
        type: 'PAYMENT',
        payment_type: 'DIRECT_CREDIT',
        reference: 'TR-E202507',
      },
      {
        transaction_id: 'E-PI-2025-07-C',
        transaction_date: '2025-07-10',
        amount: 3.5,
        type: 'CHARGE',
        reason: 'LATE_PAYMENT_FEE',
        display_note: 'Recargo por demora',
      },
    ],
  },
  billingDocuments: {
    ...account,
    ledger_code: 'GAS',
    ledger_number: 'L-GAS-0001',
    billing_document_type: 'PERIOD_BASED',
    historical_billing_documents: [
      {
        billing_document_identifier: 'FG-2024-09',
        billing_document_type: 'PERIOD_BASED',
        issued_date: '2024-10-02',
        bill_period_from_date: '2024-09-01',
        bill_period_to_date: '2024-09-30',
        transactions: [
          {
            transaction_id: 'G-BD-2024-09-C',
            transaction_date: '2024-10-02',
            amount: '38.40',
            type: 'CHARGE',
            reason: 'IMPORTED_CHARGE',
            display_note: 'Factura 2024-09',
          },
        ],
      },
    ],
    additional_historical_transactions: [
      {
        transaction_id: 'G-BD-2024-09-P',
        transaction_date: '2024-10-07',
        amount: '38.40',
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
        reference: 'DD-G202409',
      },
    ],
  },
  statements: {
    ...account,
    statements: [
      {
        bill_period_from_date: '2025-03-01',
        bill_period_to_date: '2025-03-31',
        statement_id: 'ST-2025-03',
        issued_date: '2025-04-02',
        number: 'F2025-000318',
        gross_amount: 6123,
        statement_path: `statements/2025/03/${EXAMPLE_ACCOUNT}.pdf`,
      },
    ],
  },
  /** The SIMULATED vendor (on after ./scripts/up.sh): a `sim_ok…` reference exists. */
  paymentInstruction: {
    ...account,
    vendor: 'SIMULATED',
    reference: 'sim_ok_card_4242',
    type: 'CARD',
  },
  /** The token mutation's body (`APIKey` is the organisation key the operators handed out). */
  token: {
    query:
      'mutation Obtain($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token payload refreshToken refreshExpiresIn } }',
    variables: { input: { APIKey: 'amk_2yKq9cW0pZr8Vh3nLd5TfB1xQe7sJm4uGa6oNi0RkYw' } },
  },
  /** v2: another account of the same supplier, scheduled rather than created at once. */
  scheduleAccount: {
    payload: {
      ...exampleAccount(),
      external_account_number: EXAMPLE_V2_ACCOUNT,
      operations_team_name: EXAMPLE_TEAM,
    },
    task_params: { is_dry_run: false, schedule_window_start: null, schedule_window_end: null },
  },
  /** Reconciliation: both accounts of the examples, and one the supplier never staged. */
  reconciliation: {
    import_supplier_code: EXAMPLE_SUPPLIER,
    external_account_numbers: [EXAMPLE_ACCOUNT, EXAMPLE_V2_ACCOUNT, 'ACC-2025-000999'],
  },
  params: {
    code: EXAMPLE_SUPPLIER,
    external: EXAMPLE_ACCOUNT,
    import_supplier_code: EXAMPLE_SUPPLIER,
    external_account_number: EXAMPLE_V2_ACCOUNT,
  },
} as const;

/**
 * A body schema carrying its request example for the OpenAPI document. As `x-examples` rather than zod's
 * `examples`: zod leaves examples out of the input JSON schema of a schema that transforms (every amount does).
 */
export function withExample<T extends ZodType>(schema: T, summary: string, value: unknown): T {
  return schema.meta({ 'x-examples': { example: { summary, value } } });
}
