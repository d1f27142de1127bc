import { a, ELEC, GAS, GAS_LEDGER } from './scenarios-account-paths.js';
import { del, set, type Scenario } from './scenarios.js';

/** Schema (shape and format) errors of the account payload. */
export const accountSchemaScenarios: Scenario[] = [
  a('required', 'ledgers.0.ledger_code', 'missing ledger_code', del('ledgers.0.ledger_code')),
  a('required', 'billing_postcode', 'missing billing_postcode', del('billing_postcode')),
  a('invalid_type', 'customers.0.email', 'number for a string', set('customers.0.email', 42)),
  a('invalid_type', 'ledgers.1.ledger_balance', 'null amount', set('ledgers.1.ledger_balance', null)),
  a('unexpected_field', 'customers.0.nickname', 'unknown nested field', set('customers.0.nickname', 'Mari')),
  a('unexpected_field', '__proto__', 'JSON __proto__ key at the root', set('__proto__', { polluted: true })),
  a('unexpected_field', 'ledgers.0.$where', '$-operator key', set('ledgers.0.$where', '1 == 1')),
  a(
    'invalid_choice',
    `${GAS_LEDGER}.current_statement_transactions.0.type`,
    'closed enum',
    set(`${GAS_LEDGER}.current_statement_transactions.0.type`, 'REFUND'),
  ),
  a('invalid_choice', `${ELEC}.supply_type`, 'supply_type', set(`${ELEC}.supply_type`, 'WATER')),
  a(
    'invalid_date',
    `${GAS}.supply_start_date`,
    'not a calendar date',
    set(`${GAS}.supply_start_date`, '2023-02-30'),
  ),
  a(
    'invalid_datetime',
    'notes.0.created_at',
    'space instead of T',
    set('notes.0.created_at', '2024-03-01 10:00:00'),
  ),
  a('invalid_decimal', 'ledgers.0.ledger_balance', 'decimal comma', set('ledgers.0.ledger_balance', '5,50')),
  a(
    'too_many_decimal_places',
    `${GAS_LEDGER}.historical_statement_transactions.0.amount`,
    'three places',
    set(`${GAS_LEDGER}.historical_statement_transactions.0.amount`, 30.255),
  ),
  a(
    'negative_amount',
    `${GAS_LEDGER}.current_statement_transactions.0.amount`,
    'negative charge',
    set(`${GAS_LEDGER}.current_statement_transactions.0.amount`, '-20.10'),
  ),
  a(
    'invalid_integer',
    `${ELEC}.agreements.0.estimated_monthly_fee_in_cents`,
    'fraction of a cent',
    set(`${ELEC}.agreements.0.estimated_monthly_fee_in_cents`, 65.5),
  ),
  a(
    'min_value',
    `${ELEC}.agreements.0.estimated_monthly_fee_in_cents`,
    'negative fee',
    set(`${ELEC}.agreements.0.estimated_monthly_fee_in_cents`, -1),
  ),
  a('blank', 'billing_name', 'only spaces', set('billing_name', '   ')),
  a(
    'max_length',
    'external_account_number',
    '129 characters',
    set('external_account_number', 'X'.repeat(129)),
  ),
  a('min_items', 'customers', 'no customers', set('customers', [])),
  a('invalid_character', 'billing_name', 'a NUL inside', set('billing_name', 'Ana\u0000Pérez')),
  a('invalid_character', 'billing_name', 'a newline in a short text', set('billing_name', 'Ana\nPérez')),
  a(
    'invalid_metadata_value',
    'metadata.0.value',
    'a NUL in a nested value',
    set('metadata.0.value', { a: ['ok', 'x\u0000y'] }),
  ),
  a(
    'invalid_metadata_value',
    'metadata.0.value',
    'own __proto__ key inside',
    set('metadata.0.value', JSON.parse('{"a": {"__proto__": {"admin": true}}}')),
  ),
  a(
    'invalid_metadata_value',
    'metadata.0.value',
    'constructor key inside',
    set('metadata.0.value', { a: [{ constructor: { prototype: 1 } }] }),
  ),
  a('invalid_type', 'metadata.0.value', 'array value', set('metadata.0.value', [1, 2])),
  a(
    'invalid_contractual_max_power',
    `${ELEC}.agreements.0.contractual_max_power`,
    'two values',
    set(`${ELEC}.agreements.0.contractual_max_power`, [4.6, 4.6]),
  ),
];
