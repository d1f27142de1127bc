// The one list of validation codes. Validators can only emit a `RuleCode`, so the compiler keeps this
// list complete; scripts/gen-error-docs.ts turns it into docs/error-codes.md.

export type RuleEntry = { code: string; description: string; exampleAttr: string };

export const ruleCatalogue = [
  // Shape and format (from the payload schemas).
  { code: 'required', description: 'A required field is missing.', exampleAttr: 'ledgers.0.ledger_code' },
  {
    code: 'invalid_type',
    description:
      'The value has the wrong JSON type (for example a number where a string is expected, or null).',
    exampleAttr: 'customers.0.email',
  },
  {
    code: 'unexpected_field',
    description: 'The field is not part of the documented payload; clients send only documented fields.',
    exampleAttr: 'customers.0.nickname',
  },
  {
    code: 'invalid_choice',
    description:
      'The value is not one of the allowed values (closed enumeration or the deployment catalogue).',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.type',
  },
  {
    code: 'invalid_date',
    description: 'Not a real calendar date in the format YYYY-MM-DD.',
    exampleAttr: 'supply_addresses.0.supply_points.0.supply_start_date',
  },
  {
    code: 'invalid_datetime',
    description: 'Not a valid UTC datetime in the exact format YYYY-MM-DDTHH:MM:SSZ.',
    exampleAttr: 'notes.0.created_at',
  },
  {
    code: 'invalid_decimal',
    description:
      'Not a number or decimal string (digits, optional minus sign and fraction; at most 15 integer and 10 fraction digits).',
    exampleAttr: 'ledgers.0.ledger_balance',
  },
  {
    code: 'too_many_decimal_places',
    description: 'A money amount has more than 2 decimal places.',
    exampleAttr: 'ledgers.0.historical_statement_transactions.0.amount',
  },
  {
    code: 'negative_amount',
    description:
      'A transaction amount is negative; amounts are magnitudes and the transaction type gives the sign.',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.amount',
  },
  {
    code: 'amount_out_of_range',
    description:
      'Money beyond 9,999,999,999.99 either side of zero (amounts in cents, such as gross_amount: beyond 999,999,999,999), or a transaction import taking a ledger balance beyond it; within it money is held exactly.',
    exampleAttr: 'ledgers.0.ledger_balance',
  },
  {
    code: 'invalid_integer',
    description: 'A whole number is expected.',
    exampleAttr: 'statements.0.gross_amount',
  },
  {
    code: 'min_value',
    description: 'The number is below the allowed minimum.',
    exampleAttr: 'supply_addresses.0.supply_points.0.agreements.0.estimated_monthly_fee_in_cents',
  },
  {
    code: 'blank',
    description: 'The string is empty or only whitespace; omit optional fields that have no data.',
    exampleAttr: 'billing_name',
  },
  {
    code: 'max_length',
    description: 'The string is longer than allowed.',
    exampleAttr: 'external_account_number',
  },
  { code: 'min_items', description: 'The list has fewer items than required.', exampleAttr: 'customers' },
  {
    code: 'too_many_items',
    description:
      'The list has more items than one request may carry (see the documented limits); split the import.',
    exampleAttr: 'transactions',
  },
  {
    code: 'invalid_character',
    description:
      'The text holds NUL or another control character (U+0000–U+001F, U+007F); free-text fields (notes, long descriptions) may hold tab, newline and carriage return.',
    exampleAttr: 'billing_name',
  },
  {
    code: 'invalid_metadata_value',
    description:
      'A metadata value is not a JSON object, is nested more than 10 levels or has more than 2000 values, or uses the key "__proto__", "constructor" or "prototype" at any depth (keys such as "$ref" or "a.b" are allowed).',
    exampleAttr: 'metadata.0.value',
  },
  {
    code: 'invalid_contractual_max_power',
    description: 'contractual_max_power must hold exactly 6 non-negative values (P1 to P6).',
    exampleAttr: 'supply_addresses.0.supply_points.1.agreements.0.contractual_max_power',
  },
  {
    code: 'invalid',
    description: 'The value is invalid for another reason given in the detail.',
    exampleAttr: 'non_field_errors',
  },
  // Account structure.
  {
    code: 'account_holder_missing',
    description: 'No customer has the ACCOUNT_HOLDER role.',
    exampleAttr: 'customers',
  },
  {
    code: 'duplicate_user_detail_namespaces',
    description: 'A customer repeats a user_details namespace.',
    exampleAttr: 'customers.0.user_details.2.namespace',
  },
  {
    code: 'duplicate_metadata_keys',
    description: 'A metadata key appears more than once.',
    exampleAttr: 'metadata.1.key',
  },
  {
    code: 'duplicate_statement_ids',
    description: 'A statement_id appears more than once in the payload.',
    exampleAttr: 'statements.1.statement_id',
  },
  {
    code: 'duplicate_supply_point_identifiers',
    description: 'A supply point identifier (CUPS) appears more than once in the payload.',
    exampleAttr: 'supply_addresses.1.supply_points.0.identifier',
  },
  // Ledgers and transactions.
  {
    code: 'duplicate_ledger_entries_found',
    description: 'A ledger_code appears more than once.',
    exampleAttr: 'ledgers.1.ledger_code',
  },
  {
    code: 'duplicate_transaction_ids',
    description:
      'A transaction_id appears more than once in the payload (all ledgers, or all documents of the request).',
    exampleAttr: 'ledgers.1.current_statement_transactions.3.transaction_id',
  },
  {
    code: 'transaction_in_future',
    description: 'The transaction is dated after today.',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.transaction_date',
  },
  {
    code: 'historical_transaction_after_closing_date',
    description:
      "A historical statement transaction is dated after the ledger's last_statement_closing_date.",
    exampleAttr: 'ledgers.0.historical_statement_transactions.2.transaction_date',
  },
  {
    code: 'current_transaction_not_after_closing_date',
    description:
      "A current statement transaction is dated on or before the ledger's last_statement_closing_date.",
    exampleAttr: 'ledgers.0.current_statement_transactions.0.transaction_date',
  },
  {
    code: 'historical_statement_transactions_balance_mismatch',
    description:
      'The signed sum of the historical statement transactions differs from last_statement_balance (PAYMENT and CREDIT add; CHARGE, REPAYMENT and SUPPLY_CHARGE subtract).',
    exampleAttr: 'ledgers.0.last_statement_balance',
  },
  {
    code: 'balance_mismatch_on_ledger_balance',
    description:
      'last_statement_balance plus the signed sum of the current statement transactions differs from ledger_balance.',
    exampleAttr: 'ledgers.0.ledger_balance',
  },
  {
    code: 'required_for_transaction_type',
    description:
      'The transaction type needs this field (PAYMENT/REPAYMENT: payment_type; CHARGE/CREDIT: reason; SUPPLY_CHARGE: product_code and line_items).',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.product_code',
  },
  {
    code: 'field_not_allowed_for_transaction_type',
    description:
      'The field does not apply to this transaction type (payment_type only on PAYMENT/REPAYMENT; product_code, line_items and tax_items only on SUPPLY_CHARGE).',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.line_items',
  },
  {
    code: 'incorrect_line_item_net_amount',
    description:
      'A line item net_amount differs from price_per_unit × number_of_units by half a cent or more.',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.line_items.0.net_amount',
  },
  {
    code: 'incorrect_tax_item_amount',
    description:
      'A tax item amount differs from value_taxed × rate by half a cent or more (unit types PROPORTION and CURRENCY_PER_KWH).',
    exampleAttr: 'ledgers.0.current_statement_transactions.0.tax_items.0.amount',
  },
  {
    code: 'supply_charge_amount_mismatch',
    description:
      "A SUPPLY_CHARGE amount differs from the sum of its line items' net amounts plus its tax items' amounts.",
    exampleAttr: 'ledgers.0.current_statement_transactions.0.amount',
  },
  // Dates.
  {
    code: 'start_date_later_than_end_date',
    description:
      'A period starts after it ends (line items, billable items, agreements, statements, billing documents).',
    exampleAttr: 'statements.0.bill_period_from_date',
  },
  {
    code: 'issued_date_in_future',
    description: 'A historical document is issued after today.',
    exampleAttr: 'statements.0.issued_date',
  },
  // Supply points.
  {
    code: 'last_billed_to_date_before_supply_start',
    description: 'last_billed_to_date is before supply_start_date.',
    exampleAttr: 'supply_addresses.0.supply_points.0.last_billed_to_date',
  },
  {
    code: 'overlapping_agreements',
    description:
      'Two agreements of one supply point overlap (effective_to is exclusive: an agreement may start on the day the previous one ends; an open-ended agreement overlaps any later one).',
    exampleAttr: 'supply_addresses.0.supply_points.0.agreements.1.effective_from',
  },
  {
    code: 'agreement_before_supply_start',
    description: "An agreement starts before its supply point's supply_start_date.",
    exampleAttr: 'supply_addresses.0.supply_points.0.agreements.0.effective_from',
  },
  {
    code: 'gas_only_field',
    description:
      'A gas-only field (readings, billable_items, agreement params) is given on an electricity supply point.',
    exampleAttr: 'supply_addresses.0.supply_points.1.readings',
  },
  {
    code: 'electricity_only_field',
    description:
      'An electricity-only agreement field (contractual_max_power, annual_consumption, estimated_monthly_fee_in_cents, atr_type) is given on a gas supply point.',
    exampleAttr: 'supply_addresses.0.supply_points.0.agreements.0.contractual_max_power',
  },
  {
    code: 'invalid_reading_interval',
    description: "A reading's interval_start is not strictly before its interval_end.",
    exampleAttr: 'supply_addresses.0.supply_points.0.readings.0.interval_start',
  },
  {
    code: 'incorrect_billable_item_net_amount',
    description:
      'A billable item net_amount differs from price_per_unit × number_of_units by half a cent or more.',
    exampleAttr: 'supply_addresses.0.supply_points.0.billable_items.0.net_amount',
  },
  // Notes and documents.
  {
    code: 'note_body_or_document_path_not_found',
    description: 'A note has neither a body nor document_paths.',
    exampleAttr: 'notes.0',
  },
  {
    code: 'unpin_at_not_after_created_at',
    description: "A note's unpin_at is not after its created_at.",
    exampleAttr: 'notes.0.unpin_at',
  },
  {
    code: 'unpin_at_without_pin',
    description: 'unpin_at is given on a note that is not pinned (is_pinned is not true).',
    exampleAttr: 'notes.0.unpin_at',
  },
  {
    code: 'invalid_document_path',
    description:
      'A document path is not a plain relative path: no leading slash, no scheme, no "." or ".." or empty segments, no backslashes or control characters.',
    exampleAttr: 'statements.0.statement_path',
  },
  {
    code: 'duplicate_billing_document_identifiers',
    description: 'A billing_document_identifier appears more than once in the request.',
    exampleAttr: 'historical_billing_documents.1.billing_document_identifier',
  },
  {
    code: 'billing_document_type_mismatch',
    description: "A document's billing_document_type differs from the request's billing_document_type.",
    exampleAttr: 'historical_billing_documents.0.billing_document_type',
  },
  {
    code: 'required_for_document_type',
    description: 'A PERIOD_BASED billing document needs bill_period_from_date and bill_period_to_date.',
    exampleAttr: 'historical_billing_documents.0.bill_period_from_date',
  },
  {
    code: 'field_not_allowed_for_document_type',
    description: 'An ITEM_BASED billing document must not carry bill period dates.',
    exampleAttr: 'historical_billing_documents.0.bill_period_to_date',
  },
  // Contact details and region profile.
  { code: 'invalid_email', description: 'Not a valid e-mail address.', exampleAttr: 'customers.0.email' },
  {
    code: 'possible_test_email_address',
    description:
      'The e-mail address looks like a test address (reserved or disposable domain, or a local part such as "test").',
    exampleAttr: 'customers.0.email',
  },
  {
    code: 'invalid_country',
    description: 'Not an ISO 3166-1 alpha-2 country code (upper case, e.g. "ES").',
    exampleAttr: 'supply_addresses.0.supply_address.country',
  },
  {
    code: 'invalid_phone_number',
    description:
      'Not a valid phone number for the region (ES: Spanish numbers; mobile must be a mobile number).',
    exampleAttr: 'customers.0.landline',
  },
  {
    code: 'invalid_postcode',
    description: 'Not a valid postal code for the region (ES: 5 digits, province 01 to 52).',
    exampleAttr: 'billing_postcode',
  },
  {
    code: 'invalid_fiscal_code',
    description:
      'Not a valid fiscal code for the region (ES: DNI, NIE or CIF with its check character, upper case, no separators).',
    exampleAttr: 'customers.0.user_details.0.value',
  },
  {
    code: 'invalid_cups',
    description:
      'Not a valid supply point identifier for the region (ES: CUPS "ES" + 16 digits + 2 check letters, optionally + border point digit and type).',
    exampleAttr: 'supply_addresses.0.supply_points.0.identifier',
  },
] as const satisfies readonly RuleEntry[];

export type RuleCode = (typeof ruleCatalogue)[number]['code'];

export const ruleCodes: ReadonlySet<string> = new Set(ruleCatalogue.map((r) => r.code));
