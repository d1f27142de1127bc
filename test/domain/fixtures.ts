import type { ValidationContext } from '../../src/domain/validation/index.js';
import { defaultCatalogue } from '../../src/vocabulary/catalogue.js';

// Realistic, valid payloads for every body the validators accept. Each builder returns a fresh object,
// so a test may mutate it freely. Other test suites (API, workers) import these too.

export const TODAY = '2025-06-30';

export const GAS_CUPS = 'ES0217010103496537HH';
export const ELECTRICITY_CUPS = 'ES0021000000123456XN';
export const HOLDER_DNI = '12345678Z';
export const CONTACT_NIE = 'X1234567L';

export function testContext(overrides: Partial<ValidationContext> = {}): ValidationContext {
  return { region: 'ES', catalogue: defaultCatalogue, today: TODAY, ...overrides };
}

function supplyCharge() {
  return {
    transaction_id: 'ELEC-H-001',
    transaction_date: '2025-01-10',
    amount: 59.65,
    type: 'SUPPLY_CHARGE',
    product_code: 'ELEC-2.0TD',
    display_note: 'Factura diciembre 2024',
    line_items: [
      {
        rate_band: 'CONSUMPTION_P1',
        start_date: '2024-12-01',
        end_date: '2024-12-31',
        number_of_units: 100,
        price_per_unit: 0.15,
        net_amount: 15,
        units: [40, 60],
      },
      {
        rate_band: 'CONSUMPTION_P2',
        start_date: '2024-12-01',
        end_date: '2024-12-31',
        number_of_units: 200,
        price_per_unit: '0.125',
        net_amount: '25.00',
      },
      {
        rate_band: 'POWER_P1',
        start_date: '2024-12-01',
        end_date: '2024-12-31',
        number_of_units: 31,
        price_per_unit: 0.3,
        net_amount: 9.3,
      },
    ],
    // 49.30 × 0.21 = 10.353, stated to the cent.
    tax_items: [{ amount: 10.35, tax_type: 'VAT', value_taxed: 49.3, rate: 0.21, unit_type: 'PROPORTION' }],
  };
}

function electricityLedger() {
  return {
    ledger_code: 'ELECTRICITY',
    last_statement_balance: -12,
    last_statement_closing_date: '2025-03-31',
    ledger_balance: '5.50',
    historical_statement_transactions: [
      supplyCharge(),
      {
        transaction_id: 'ELEC-H-002',
        transaction_date: '2025-01-20',
        amount: '59.65',
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
        reference: 'DD-0001',
      },
      {
        transaction_id: 'ELEC-H-003',
        transaction_date: '2025-02-15',
        amount: 12,
        type: 'CHARGE',
        reason: 'IMPORTED_CHARGE',
        display_note: 'Cargo por reconexión',
      },
    ],
    current_statement_transactions: [
      {
        transaction_id: 'ELEC-C-001',
        transaction_date: '2025-04-05',
        amount: 12,
        type: 'PAYMENT',
        payment_type: 'DIRECT_CREDIT',
        reference: 'TR-88',
      },
      {
        transaction_id: 'ELEC-C-002',
        transaction_date: '2025-04-10',
        amount: '5.50',
        type: 'CREDIT',
        reason: 'GOODWILL_CREDIT',
        note: 'Compensación por incidencia',
      },
    ],
  };
}

function gasLedger() {
  return {
    ledger_code: 'GAS',
    last_statement_balance: 0,
    last_statement_closing_date: '2025-02-28',
    ledger_balance: -20.1,
    historical_statement_transactions: [
      {
        transaction_id: 'GAS-H-001',
        transaction_date: '2025-01-31',
        amount: 30.25,
        type: 'CHARGE',
        reason: 'IMPORTED_CHARGE',
      },
      {
        transaction_id: 'GAS-H-002',
        transaction_date: '2025-02-10',
        amount: 30.25,
        type: 'PAYMENT',
        payment_type: 'DEBIT_CARD',
        reference: 'CARD-77',
      },
    ],
    current_statement_transactions: [
      {
        transaction_id: 'GAS-C-001',
        transaction_date: '2025-03-31',
        amount: '20.10',
        type: 'CHARGE',
        reason: 'IMPORTED_CHARGE',
      },
    ],
  };
}

function gasSupplyPoint() {
  return {
    identifier: GAS_CUPS,
    distributor_ree_code: '0217',
    supply_type: 'GAS',
    supply_start_date: '2020-02-01',
    last_billed_to_date: '2025-04-30',
    atr: 'ATR-G-2020-0001',
    agreements: [
      {
        tariff_code: 'RL.1',
        effective_from: '2020-02-01',
        effective_to: '2023-02-01',
        params: { availability_discount: 0, consumption_discount: 5 },
      },
      {
        tariff_code: 'RL.2',
        effective_from: '2023-02-01',
        cnae: '9820',
        params: { availability_discount: '2.5', consumption_discount: 5 },
      },
    ],
    readings: [
      {
        meter_serial_number: 'G-4471',
        interval_start: '2025-03-01T00:00:00Z',
        interval_end: '2025-04-01T00:00:00Z',
        consumption_delta: '412.5',
        source: 1,
      },
    ],
    billable_items: [
      {
        net_amount: 4.5,
        billable_item_type: 'METER_RENTAL',
        interval_start: '2025-03-01',
        interval_end: '2025-03-31',
        number_of_units: 1,
        price_per_unit: 4.5,
        unit_type: 'PER_ITEM',
      },
    ],
  };
}

function electricitySupplyPoint() {
  return {
    identifier: ELECTRICITY_CUPS,
    distributor_ree_code: '0021',
    supply_type: 'ELECTRICITY',
    supply_start_date: '2019-06-01',
    last_billed_to_date: '2025-03-31',
    atr: 'ATR-E-2019-0042',
    agreements: [
      {
        tariff_code: '2.0TD',
        effective_from: '2019-06-01',
        contractual_max_power: [4.6, 4.6, 0, 0, 0, 0],
        annual_consumption: '3500',
        estimated_monthly_fee_in_cents: 6500,
        atr_type: '2.0TD',
      },
    ],
  };
}

/** A valid account: 2 customers, 1 address with a gas and an electricity point, 2 balanced ledgers. */
export function validAccountPayload() {
  return {
    import_supplier: 'ACME_ENERGIA',
    external_account_number: 'EXT-000123',
    account_type: 'DOMESTIC',
    customers: [
      {
        account_roles: ['ACCOUNT_HOLDER'],
        user_details: [
          { namespace: 'fiscal_code', value: HOLDER_DNI },
          { namespace: 'first_family_name', value: 'García' },
          { namespace: 'second_family_name', value: 'López' },
        ],
        given_name: 'María',
        family_name: 'García López',
        email: 'maria.garcia@correo-cliente.es',
        mobile: '+34 612 345 678',
        landline: '912345678',
      },
      {
        account_roles: ['AUTHORISED_CONTACT'],
        user_details: [{ namespace: 'fiscal_code', value: CONTACT_NIE }],
        given_name: 'John',
        family_name: 'Smith',
        email: 'john.smith@correo-cliente.es',
        mobile: '655443322',
      },
    ],
    supply_addresses: [
      {
        supply_address: {
          locality: 'Madrid',
          administrative_area: 'Madrid',
          postal_code: '28013',
          country: 'ES',
          structured_street_address: {
            street_type: 'Calle',
            street_name: 'Mayor',
            street_number: '10',
            floor: '3',
            door: 'B',
          },
        },
        customer_at_supply_address_from_date: '2019-05-15',
        supply_points: [gasSupplyPoint(), electricitySupplyPoint()],
      },
    ],
    notes: [
      {
        body: 'Prefiere contacto por correo electrónico.',
        created_at: '2024-03-01T10:00:00Z',
        is_pinned: true,
        unpin_at: '2025-12-31T00:00:00Z',
      },
      { body: 'Cliente migrado desde el sistema anterior.', created_at: '2025-05-02T08:30:00Z' },
    ],
    ledgers: [electricityLedger(), gasLedger()],
    payment_schedules: [{ means: 'MANUAL', start_date: '2024-01-01', trigger: 'BILL' }],
    statements: [
      {
        bill_period_from_date: '2025-01-01',
        bill_period_to_date: '2025-01-31',
        statement_path: 'statements/2025/01/EXT-000123.pdf',
        statement_id: 'ST-2025-01',
        supply_type: 'ELECTRICITY',
      },
      {
        bill_period_from_date: '2025-02-01',
        bill_period_to_date: '2025-02-28',
        statement_path: 'statements/2025/02/EXT-000123-gas.pdf',
        statement_id: 'ST-2025-02-G',
        supply_type: 'GAS',
      },
    ],
    metadata: [{ key: 'legacy_system', value: { name: 'SAP-ISU', batch: 7, tags: ['vip', 'paper-free'] } }],
    references: [{ namespace: 'legacy_contract', value: 'C-99887766' }],
    billing_name: 'María García López',
    billing_address1: 'Calle Mayor 10, 3B',
    billing_address4: 'Madrid',
    billing_postcode: '28013',
    sales_channel: 'PARTNERS',
    sales_subchannel: 'Comparador Luz y Gas',
    communication_preference: 'ONLINE',
  };
}

export type AccountFixture = ReturnType<typeof validAccountPayload>;

export { largeAccountPayload } from './fixtures-large.js';
export * from './fixtures-post-import.js';
