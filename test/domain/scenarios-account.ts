import { GAS_CUPS } from './fixtures.js';
import { pushAt } from './json-path.js';
import { a, ELEC, GAS, GAS_LEDGER, SUPPLY_CHARGE } from './scenarios-account-paths.js';
import { del, set, type Edit, type Scenario } from './scenarios.js';

const push =
  (path: string, value: unknown): Edit =>
  (p) =>
    pushAt(p, path, value);

/** Cross-field, catalogue and region rules of the account payload. */
export const accountRuleScenarios: Scenario[] = [
  a('invalid_choice', 'account_type', 'catalogue value', set('account_type', 'ALIEN')),
  a(
    'invalid_choice',
    'ledgers.0.current_statement_transactions.0.payment_type',
    'payment_type',
    set('ledgers.0.current_statement_transactions.0.payment_type', 'BITCOIN'),
  ),
  a(
    'invalid_choice',
    `${GAS}.billable_items.0.unit_type`,
    'billable unit',
    set(`${GAS}.billable_items.0.unit_type`, 'PER_FORTNIGHT'),
  ),
  a(
    'account_holder_missing',
    'customers',
    'no holder',
    set('customers.0.account_roles', ['JOINT_ACCOUNT_HOLDER']),
  ),
  a(
    'duplicate_user_detail_namespaces',
    'customers.0.user_details.3.namespace',
    'namespace twice',
    push('customers.0.user_details', { namespace: 'first_family_name', value: 'Otra' }),
  ),
  a(
    'duplicate_metadata_keys',
    'metadata.1.key',
    'key twice',
    push('metadata', { key: 'legacy_system', value: {} }),
  ),
  a(
    'duplicate_statement_ids',
    'statements.1.statement_id',
    'id twice',
    set('statements.1.statement_id', 'ST-2025-01'),
  ),
  a(
    'duplicate_supply_point_identifiers',
    `${ELEC}.identifier`,
    'same CUPS',
    set(`${ELEC}.identifier`, GAS_CUPS),
  ),
  a(
    'duplicate_ledger_entries_found',
    'ledgers.1.ledger_code',
    'code twice',
    set('ledgers.1.ledger_code', 'ELECTRICITY'),
  ),
  a(
    'duplicate_transaction_ids',
    `${GAS_LEDGER}.current_statement_transactions.0.transaction_id`,
    'across ledgers',
    set(`${GAS_LEDGER}.current_statement_transactions.0.transaction_id`, 'ELEC-C-001'),
  ),
  a(
    'transaction_in_future',
    `${GAS_LEDGER}.current_statement_transactions.0.transaction_date`,
    'tomorrow',
    set(`${GAS_LEDGER}.current_statement_transactions.0.transaction_date`, '2025-07-01'),
  ),
  a(
    'historical_transaction_after_closing_date',
    `${GAS_LEDGER}.historical_statement_transactions.1.transaction_date`,
    'after closing',
    set(`${GAS_LEDGER}.historical_statement_transactions.1.transaction_date`, '2025-03-05'),
  ),
  a(
    'current_transaction_not_after_closing_date',
    `${GAS_LEDGER}.current_statement_transactions.0.transaction_date`,
    'on closing date',
    set(`${GAS_LEDGER}.current_statement_transactions.0.transaction_date`, '2025-02-28'),
  ),
  a(
    'historical_statement_transactions_balance_mismatch',
    `${GAS_LEDGER}.last_statement_balance`,
    'off by one euro',
    set(`${GAS_LEDGER}.last_statement_balance`, 1),
    set(`${GAS_LEDGER}.ledger_balance`, '-19.10'),
  ),
  a(
    'balance_mismatch_on_ledger_balance',
    `${GAS_LEDGER}.ledger_balance`,
    'off by one cent',
    set(`${GAS_LEDGER}.ledger_balance`, -20.11),
  ),
  a(
    'required_for_transaction_type',
    `${SUPPLY_CHARGE}.product_code`,
    'supply charge without product',
    del(`${SUPPLY_CHARGE}.product_code`),
  ),
  a(
    'required_for_transaction_type',
    'ledgers.0.historical_statement_transactions.1.payment_type',
    'payment without payment_type',
    del('ledgers.0.historical_statement_transactions.1.payment_type'),
  ),
  a(
    'field_not_allowed_for_transaction_type',
    `${GAS_LEDGER}.current_statement_transactions.0.payment_type`,
    'payment_type on a charge',
    set(`${GAS_LEDGER}.current_statement_transactions.0.payment_type`, 'CASH'),
  ),
  a(
    'incorrect_line_item_net_amount',
    `${SUPPLY_CHARGE}.line_items.0.net_amount`,
    'price changed',
    set(`${SUPPLY_CHARGE}.line_items.0.price_per_unit`, 0.16),
  ),
  a(
    'incorrect_tax_item_amount',
    `${SUPPLY_CHARGE}.tax_items.0.amount`,
    'rate changed',
    set(`${SUPPLY_CHARGE}.tax_items.0.rate`, 0.1),
  ),
  a(
    'supply_charge_amount_mismatch',
    `${SUPPLY_CHARGE}.amount`,
    'line added up differently',
    set(`${SUPPLY_CHARGE}.line_items.2.number_of_units`, 32),
    set(`${SUPPLY_CHARGE}.line_items.2.net_amount`, 9.6),
  ),
  a(
    'start_date_later_than_end_date',
    'statements.0.bill_period_from_date',
    'statement period',
    set('statements.0.bill_period_from_date', '2025-02-01'),
  ),
  a(
    'start_date_later_than_end_date',
    `${SUPPLY_CHARGE}.line_items.1.start_date`,
    'line item period',
    set(`${SUPPLY_CHARGE}.line_items.1.start_date`, '2025-01-01'),
  ),
  a(
    'last_billed_to_date_before_supply_start',
    `${GAS}.last_billed_to_date`,
    'billed before start',
    set(`${GAS}.last_billed_to_date`, '2020-01-01'),
  ),
  a(
    'overlapping_agreements',
    `${GAS}.agreements.1.effective_from`,
    'starts before previous ends',
    set(`${GAS}.agreements.1.effective_from`, '2023-01-15'),
  ),
  a(
    'agreement_before_supply_start',
    `${GAS}.agreements.0.effective_from`,
    'before supply start',
    set(`${GAS}.agreements.0.effective_from`, '2020-01-01'),
  ),
  a('gas_only_field', `${ELEC}.readings`, 'readings on electricity', set(`${ELEC}.readings`, [])),
  a(
    'gas_only_field',
    `${ELEC}.agreements.0.params`,
    'params on electricity',
    set(`${ELEC}.agreements.0.params`, { availability_discount: 0, consumption_discount: 0 }),
  ),
  a(
    'electricity_only_field',
    `${GAS}.agreements.0.atr_type`,
    'atr_type on gas',
    set(`${GAS}.agreements.0.atr_type`, '2.0TD'),
  ),
  a(
    'invalid_reading_interval',
    `${GAS}.readings.0.interval_start`,
    'empty interval',
    set(`${GAS}.readings.0.interval_end`, '2025-03-01T00:00:00Z'),
  ),
  a(
    'incorrect_billable_item_net_amount',
    `${GAS}.billable_items.0.net_amount`,
    'price changed',
    set(`${GAS}.billable_items.0.price_per_unit`, 4.6),
  ),
  a(
    'unpin_at_not_after_created_at',
    'notes.0.unpin_at',
    'unpin at creation',
    set('notes.0.unpin_at', '2024-03-01T10:00:00Z'),
  ),
  a('note_body_or_document_path_not_found', 'notes.1', 'note without a body', del('notes.1.body')),
  a(
    'unpin_at_without_pin',
    'notes.1.unpin_at',
    'note not pinned',
    set('notes.1.unpin_at', '2025-12-01T00:00:00Z'),
  ),
  a(
    'invalid_document_path',
    'statements.0.statement_path',
    'parent segment',
    set('statements.0.statement_path', 'statements/../../secrets.pdf'),
  ),
  a('invalid_email', 'customers.0.email', 'no domain', set('customers.0.email', 'maria.garcia@')),
  a(
    'possible_test_email_address',
    'customers.1.email',
    'example.com',
    set('customers.1.email', 'john@example.com'),
  ),
  a(
    'invalid_country',
    'supply_addresses.0.supply_address.country',
    'unknown code',
    set('supply_addresses.0.supply_address.country', 'XX'),
  ),
  a('invalid_phone_number', 'customers.0.landline', 'too short', set('customers.0.landline', '12345')),
  a(
    'invalid_phone_number',
    'customers.1.mobile',
    'landline as mobile',
    set('customers.1.mobile', '912345678'),
  ),
  a('invalid_postcode', 'billing_postcode', 'province 99', set('billing_postcode', '99000')),
  a(
    'invalid_postcode',
    'supply_addresses.0.supply_address.postal_code',
    'four digits',
    set('supply_addresses.0.supply_address.postal_code', '2801'),
  ),
  a(
    'invalid_fiscal_code',
    'customers.0.user_details.0.value',
    'wrong DNI letter',
    set('customers.0.user_details.0.value', '12345678A'),
  ),
  a(
    'invalid_cups',
    `${GAS}.identifier`,
    'wrong check letters',
    set(`${GAS}.identifier`, 'ES0217010103496537HX'),
  ),
];
