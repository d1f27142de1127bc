// Valid bodies of the post-import endpoints, built from the same shapes as the account payload.

const account = { import_supplier: 'ACME_ENERGIA', external_account_number: 'EXT-000123' };

export function validNotesImport() {
  return {
    ...account,
    notes: [
      { body: 'Llamada de bienvenida realizada.', created_at: '2025-06-01T09:15:00Z' },
      {
        document_paths: [{ document_path: 'notes/EXT-000123/contrato-firmado.pdf' }],
        is_pinned: true,
        unpin_at: '2025-09-01T00:00:00Z',
      },
    ],
  };
}

export function validTransactionsImport() {
  return {
    ...account,
    ledger_code: 'ELECTRICITY',
    transactions: [
      {
        transaction_id: 'POST-001',
        transaction_date: '2025-06-10',
        amount: '42.00',
        type: 'PAYMENT',
        payment_type: 'BANK_TRANSFER',
        reference: 'TR-2025-06',
      },
      {
        transaction_id: 'POST-002',
        transaction_date: '2025-06-12',
        amount: 3.5,
        type: 'CHARGE',
        reason: 'LATE_PAYMENT_FEE',
      },
    ],
    dry_run: false,
  };
}

export function validBillingDocumentsImport() {
  return {
    ...account,
    ledger_code: 'ELECTRICITY',
    ledger_number: 'L-0001',
    billing_document_type: 'PERIOD_BASED',
    historical_billing_documents: [
      {
        billing_document_identifier: 'FAC-2024-11',
        billing_document_type: 'PERIOD_BASED',
        issued_date: '2024-12-05',
        bill_period_from_date: '2024-11-01',
        bill_period_to_date: '2024-11-30',
        transactions: [
          {
            transaction_id: 'HBD-001',
            transaction_date: '2024-12-05',
            amount: 48.2,
            type: 'CHARGE',
            reason: 'IMPORTED_CHARGE',
          },
        ],
      },
    ],
    additional_historical_transactions: [
      {
        transaction_id: 'HBD-002',
        transaction_date: '2024-12-20',
        amount: 48.2,
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
      },
    ],
  };
}

export function validStatementsImport() {
  return {
    ...account,
    statements: [
      {
        bill_period_from_date: '2025-04-01',
        bill_period_to_date: '2025-04-30',
        statement_id: 'ST-2025-04',
        issued_date: '2025-05-03',
        number: 'F2025-000431',
        gross_amount: 6421,
        statement_path: 'statements/2025/04/EXT-000123.pdf',
      },
    ],
  };
}

export function validPaymentInstruction() {
  return { ...account, vendor: 'STRIPE', reference: 'pm_12345', type: 'CARD' };
}

export function validCreateAccountRequest() {
  return {
    external_account_number: 'EXT-000123',
    import_supplier_code: 'ACME_ENERGIA',
    operations_team_name: 'Migraciones Madrid',
    dry_run: true,
  };
}
