import { del, scenario, set, type Edit, type Scenario } from './scenarios.js';
import { getAt, pushAt } from './json-path.js';
import { POST_IMPORT_LIMITS } from '../../src/schemas/post-import.js';

const DOC = 'historical_billing_documents.0';

const copyOf =
  (path: string, changes: Record<string, unknown>): Edit =>
  (p) => {
    const item = structuredClone(getAt(p, path)) as Record<string, unknown>;
    pushAt(p, path.slice(0, path.lastIndexOf('.')), { ...item, ...changes });
  };

export const postImportScenarios: Scenario[] = [
  scenario(
    'notes',
    'note_body_or_document_path_not_found',
    'notes.0',
    'empty note',
    set('notes.0', { created_at: '2025-06-01T09:15:00Z' }),
  ),
  scenario(
    'notes',
    'invalid_document_path',
    'notes.1.document_paths.0.document_path',
    'absolute path',
    set('notes.1.document_paths.0.document_path', '/etc/passwd'),
  ),
  scenario('notes', 'min_items', 'notes', 'no notes', set('notes', [])),
  scenario('notes', 'too_many_items', 'notes', 'more notes than one request may carry', (p) => {
    const note = getAt(p, 'notes.0');
    for (let i = 0; i < POST_IMPORT_LIMITS.notes; i++) pushAt(p, 'notes', structuredClone(note));
  }),
  scenario(
    'notes',
    'unpin_at_not_after_created_at',
    'notes.0.unpin_at',
    'unpin before creation',
    set('notes.0.is_pinned', true),
    set('notes.0.unpin_at', '2025-05-01T00:00:00Z'),
  ),
  scenario(
    'transactions',
    'duplicate_transaction_ids',
    'transactions.1.transaction_id',
    'id twice',
    set('transactions.1.transaction_id', 'POST-001'),
  ),
  scenario(
    'transactions',
    'transaction_in_future',
    'transactions.0.transaction_date',
    'tomorrow',
    set('transactions.0.transaction_date', '2025-07-01'),
  ),
  scenario(
    'transactions',
    'required_for_transaction_type',
    'transactions.1.reason',
    'charge without reason',
    del('transactions.1.reason'),
  ),
  scenario('transactions', 'invalid_type', 'dry_run', 'string flag', set('dry_run', 'yes')),
  scenario(
    'transactions',
    'amount_out_of_range',
    'transactions.1.amount',
    '2^53 + 1 cents as a JSON number',
    set('transactions.1.amount', JSON.parse('90071992547409.93')),
  ),
  scenario(
    'billingDocuments',
    'amount_out_of_range',
    `${DOC}.transactions.0.amount`,
    "a document's transaction",
    set(`${DOC}.transactions.0.amount`, '10000000000.00'),
  ),
  scenario(
    'billingDocuments',
    'amount_out_of_range',
    'additional_historical_transactions.0.amount',
    'an additional transaction',
    set('additional_historical_transactions.0.amount', '999999999999999.99'),
  ),
  scenario(
    'billingDocuments',
    'duplicate_billing_document_identifiers',
    'historical_billing_documents.1.billing_document_identifier',
    'identifier twice',
    copyOf(DOC, {
      transactions: [
        {
          transaction_id: 'HBD-003',
          transaction_date: '2024-12-06',
          amount: 1,
          type: 'CHARGE',
          reason: 'IMPORTED_CHARGE',
        },
      ],
    }),
  ),
  scenario(
    'billingDocuments',
    'billing_document_type_mismatch',
    `${DOC}.billing_document_type`,
    'item-based in a period-based import',
    set(`${DOC}.billing_document_type`, 'ITEM_BASED'),
    del(`${DOC}.bill_period_from_date`),
    del(`${DOC}.bill_period_to_date`),
  ),
  scenario(
    'billingDocuments',
    'required_for_document_type',
    `${DOC}.bill_period_to_date`,
    'period-based without end',
    del(`${DOC}.bill_period_to_date`),
  ),
  scenario(
    'billingDocuments',
    'field_not_allowed_for_document_type',
    `${DOC}.bill_period_from_date`,
    'item-based with a period',
    set('billing_document_type', 'ITEM_BASED'),
    set(`${DOC}.billing_document_type`, 'ITEM_BASED'),
    del(`${DOC}.bill_period_to_date`),
  ),
  scenario(
    'billingDocuments',
    'issued_date_in_future',
    `${DOC}.issued_date`,
    'issued tomorrow',
    set(`${DOC}.issued_date`, '2025-07-01'),
  ),
  scenario(
    'billingDocuments',
    'start_date_later_than_end_date',
    `${DOC}.bill_period_from_date`,
    'reversed period',
    set(`${DOC}.bill_period_from_date`, '2024-12-01'),
  ),
  scenario(
    'billingDocuments',
    'duplicate_transaction_ids',
    'additional_historical_transactions.0.transaction_id',
    'document and additional',
    set('additional_historical_transactions.0.transaction_id', 'HBD-001'),
  ),
  scenario(
    'billingDocuments',
    'min_items',
    `${DOC}.transactions`,
    'document without transactions',
    set(`${DOC}.transactions`, []),
  ),
  scenario(
    'statements',
    'issued_date_in_future',
    'statements.0.issued_date',
    'issued tomorrow',
    set('statements.0.issued_date', '2025-07-01'),
  ),
  scenario(
    'statements',
    'duplicate_statement_ids',
    'statements.1.statement_id',
    'id twice',
    copyOf('statements.0', { number: 'F2025-000432' }),
  ),
  scenario(
    'statements',
    'invalid_integer',
    'statements.0.gross_amount',
    'euros instead of cents',
    set('statements.0.gross_amount', 64.21),
  ),
  scenario(
    'statements',
    'amount_out_of_range',
    'statements.0.gross_amount',
    '10^12 cents',
    set('statements.0.gross_amount', 1e12),
  ),
  scenario(
    'statements',
    'invalid_document_path',
    'statements.0.statement_path',
    'URL',
    set('statements.0.statement_path', 'https://bucket.example/x.pdf'),
  ),
  scenario('paymentInstruction', 'invalid_choice', 'vendor', 'unknown vendor', set('vendor', 'PAYPAL')),
  scenario('paymentInstruction', 'invalid_choice', 'type', 'unknown type', set('type', 'CASH')),
  scenario('paymentInstruction', 'required', 'reference', 'missing reference', del('reference')),
  scenario(
    'createAccount',
    'max_length',
    'external_account_number',
    '129 characters',
    set('external_account_number', 'A'.repeat(129)),
  ),
  scenario('createAccount', 'blank', 'external_account_number', 'empty', set('external_account_number', '')),
  scenario('createAccount', 'required', 'operations_team_name', 'no team', del('operations_team_name')),
  scenario('createAccount', 'invalid_type', 'dry_run', 'string flag', set('dry_run', 'true')),
  scenario(
    'createAccount',
    'unexpected_field',
    'import_supplier',
    'stage-style key',
    set('import_supplier', 'ACME_ENERGIA'),
  ),
];
