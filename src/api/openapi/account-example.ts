import { Decimal } from 'decimal.js';
import { DEMO } from '../../use-cases/admin/demo.js';

// The account example of the API documentation: what a migration team sends (a holder, one address with an
// electricity and a gas supply point, two ledgers with months of history and an open period), small enough
// to read. Balances are computed exactly, so the example passes the service's own validation (a test sends it).
// It belongs to the demo supplier and team that ./scripts/up.sh seeds, so every example works pasted after it.

export const EXAMPLE_SUPPLIER = DEMO.supplier;
/** The one account the v1 examples take from validation to its post-import data. */
export const EXAMPLE_ACCOUNT = 'ACC-2025-000123';
export const EXAMPLE_TEAM = DEMO.team;

/** The last closed statement of both ledgers; the open period starts the day after. */
const CLOSING_DATE = '2025-03-31';

type Tx = Record<string, unknown> & { amount: string | number; type: string };

function monthStart(closing: string, monthsBack: number): Date {
  const d = new Date(`${closing.slice(0, 7)}-01T00:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() - monthsBack);
  return d;
}

function day(d: Date, dayOfMonth: number): string {
  return `${d.toISOString().slice(0, 8)}${String(dayOfMonth).padStart(2, '0')}`;
}

/** PAYMENT and CREDIT add to the balance; CHARGE, REPAYMENT and SUPPLY_CHARGE subtract. */
function signed(tx: Tx): Decimal {
  const amount = new Decimal(tx.amount);
  return tx.type === 'PAYMENT' || tx.type === 'CREDIT' ? amount : amount.negated();
}

const sum = (txs: readonly Tx[]) => txs.reduce((acc, tx) => acc.plus(signed(tx)), new Decimal(0));

type LedgerKind = { code: 'ELECTRICITY' | 'GAS'; prefix: string; base: number; product: string };

const KINDS: readonly LedgerKind[] = [
  { code: 'ELECTRICITY', prefix: 'E', base: 48.2, product: 'ELEC-2.0TD' },
  { code: 'GAS', prefix: 'G', base: 31.75, product: 'GAS-RL.1' },
];

/** A monthly bill and its direct-debit collection; once a year a loyalty credit refunded by transfer. */
function history(kind: LedgerKind, months: number): Tx[] {
  const txs: Tx[] = [];
  for (let back = months; back >= 1; back--) {
    const month = monthStart(CLOSING_DATE, back - 1);
    const n = months - back + 1;
    const amount = new Decimal(kind.base).plus((n * 7.31) % 19).toDecimalPlaces(2);
    const label = month.toISOString().slice(0, 7);
    const id = `${kind.prefix}-H-${String(n).padStart(3, '0')}`;
    txs.push({
      transaction_id: `${id}-C`,
      transaction_date: day(month, 3),
      // Legacy exports mix numbers and decimal strings; both are accepted.
      amount: n % 3 === 0 ? amount.toFixed(2) : amount.toNumber(),
      type: 'CHARGE',
      reason: 'IMPORTED_CHARGE',
      display_note: `Factura ${label}`,
      note: `Imported from the legacy bill ${kind.prefix}${label.replace('-', '')}`,
    });
    // The last bill before the closing date is collected in the open period (see `current`).
    if (back > 1) {
      txs.push({
        transaction_id: `${id}-P`,
        transaction_date: day(month, 8),
        amount: amount.toFixed(2),
        type: 'PAYMENT',
        payment_type: 'DD_REGULAR_COLLECTION',
        reference: `DD-${kind.prefix}${label.replace('-', '')}`,
      });
    }
    if (n % 12 === 1) {
      txs.push(
        {
          transaction_id: `${id}-L`,
          transaction_date: day(month, 15),
          amount: '15.00',
          type: 'CREDIT',
          reason: 'GENERAL_CREDIT',
          display_note: 'Descuento de fidelidad',
        },
        {
          transaction_id: `${id}-R`,
          transaction_date: day(month, 20),
          amount: '15.00',
          type: 'REPAYMENT',
          payment_type: 'DIRECT_CREDIT',
          reference: `TR-${kind.prefix}${label.replace('-', '')}`,
        },
      );
    }
  }
  return txs;
}

/** A monthly supply charge: consumption and power lines, each units × price to the cent, plus 21 % VAT. */
function supplyCharge(kind: LedgerKind, month: Date, n: number): Tx {
  const start = day(month, 1);
  const end = new Date(month);
  end.setUTCMonth(end.getUTCMonth() + 1, 0);
  const endDate = end.toISOString().slice(0, 10);
  const lines = [
    {
      rate_band: kind.code === 'GAS' ? 'CONSUMPTION_STANDARD' : 'CONSUMPTION_P1',
      units: 120 + n * 17,
      price: '0.1325',
    },
    {
      rate_band: kind.code === 'GAS' ? 'STANDING_CHARGE' : 'POWER_P1',
      units: end.getUTCDate(),
      price: '0.1154',
    },
  ].map((l) => ({
    rate_band: l.rate_band,
    start_date: start,
    end_date: endDate,
    number_of_units: l.units,
    price_per_unit: l.price,
    net_amount: new Decimal(l.units).times(l.price).toDecimalPlaces(2).toFixed(2),
  }));
  const net = lines.reduce((acc, l) => acc.plus(l.net_amount), new Decimal(0));
  const vat = net.times('0.21').toDecimalPlaces(2);
  return {
    transaction_id: `${kind.prefix}-C-${String(n).padStart(3, '0')}-S`,
    transaction_date: day(month, 2 + ((n * 5) % 20)),
    amount: net.plus(vat).toFixed(2),
    type: 'SUPPLY_CHARGE',
    product_code: kind.product,
    display_note: `Factura ${start.slice(0, 7)}`,
    line_items: lines,
    tax_items: [
      {
        amount: vat.toFixed(2),
        tax_type: 'VAT',
        value_taxed: net.toFixed(2),
        rate: '0.21',
        unit_type: 'PROPORTION',
      },
    ],
  };
}

/** The open period: the last bill's collection, three supply charges and their payments, one extra charge. */
function current(kind: LedgerKind, lastBill: Tx): Tx[] {
  const txs: Tx[] = [
    {
      transaction_id: `${kind.prefix}-C-000-P`,
      transaction_date: '2025-04-05',
      amount: new Decimal(lastBill.amount).toFixed(2),
      type: 'PAYMENT',
      payment_type: 'DD_REGULAR_COLLECTION',
      reference: `DD-${kind.prefix}202503`,
    },
  ];
  for (let n = 1; n <= 3; n++) {
    const month = monthStart(CLOSING_DATE, -n);
    const charge = supplyCharge(kind, month, n);
    txs.push(charge, {
      transaction_id: `${kind.prefix}-C-${String(n).padStart(3, '0')}-P`,
      transaction_date: day(month, 25),
      amount: charge.amount,
      type: 'PAYMENT',
      payment_type: 'DD_REGULAR_COLLECTION',
      reference: `DD-${kind.prefix}${day(month, 1).slice(0, 7).replace('-', '')}`,
    });
  }
  txs.push({
    transaction_id: `${kind.prefix}-C-004-C`,
    transaction_date: '2025-06-27',
    amount: '12.10',
    type: 'CHARGE',
    reason: 'IMPORTED_CHARGE',
    display_note: 'Cargo por reconexión',
  });
  return txs;
}

function ledger(kind: LedgerKind, months: number) {
  const historical = history(kind, months);
  const lastBill = historical.filter((tx) => tx.type === 'CHARGE').at(-1)!;
  const open = current(kind, lastBill);
  const closing = sum(historical);
  return {
    ledger_code: kind.code,
    last_statement_balance: closing.toFixed(2),
    last_statement_closing_date: CLOSING_DATE,
    ledger_balance: closing.plus(sum(open)).toFixed(2),
    historical_statement_transactions: historical,
    current_statement_transactions: open,
  };
}

/** A realistic DOMESTIC account with `months` of history on each of its two ledgers. */
export function exampleAccount(months = 6) {
  return {
    import_supplier: EXAMPLE_SUPPLIER,
    external_account_number: EXAMPLE_ACCOUNT,
    account_type: 'DOMESTIC',
    customers: [
      {
        account_roles: ['ACCOUNT_HOLDER'],
        user_details: [
          { namespace: 'fiscal_code', value: '12345678Z' },
          { namespace: 'first_family_name', value: 'Fernández' },
          { namespace: 'second_family_name', value: 'Ruiz' },
        ],
        given_name: 'Lucía',
        family_name: 'Fernández Ruiz',
        email: 'lucia.fernandez@correo-cliente.es',
        mobile: '+34 612 345 678',
      },
    ],
    supply_addresses: [
      {
        supply_address: {
          locality: 'Valencia',
          administrative_area: 'Valencia',
          postal_code: '46004',
          country: 'ES',
          structured_street_address: {
            street_type: 'Calle',
            street_name: 'Colón',
            street_number: '22',
            floor: '4',
            door: 'A',
          },
        },
        customer_at_supply_address_from_date: '2019-05-15',
        supply_points: [
          {
            identifier: 'ES0021000000123456XN',
            distributor_ree_code: '0021',
            supply_type: 'ELECTRICITY',
            supply_start_date: '2019-06-01',
            last_billed_to_date: '2025-06-30',
            atr: 'ATR-E-2019-0042',
            agreements: [
              {
                tariff_code: '2.0TD',
                effective_from: '2019-06-01',
                effective_to: '2023-06-01',
                contractual_max_power: [3.45, 3.45, 0, 0, 0, 0],
                annual_consumption: '3100',
                estimated_monthly_fee_in_cents: 5800,
                atr_type: '2.0TD',
              },
              {
                tariff_code: '2.0TD',
                effective_from: '2023-06-01',
                contractual_max_power: [4.6, 4.6, 0, 0, 0, 0],
                annual_consumption: '3500',
                estimated_monthly_fee_in_cents: 6500,
                atr_type: '2.0TD',
              },
            ],
          },
          {
            identifier: 'ES0217010103496537HH',
            distributor_ree_code: '0217',
            supply_type: 'GAS',
            supply_start_date: '2020-02-01',
            last_billed_to_date: '2025-06-30',
            atr: 'ATR-G-2020-0001',
            agreements: [
              {
                tariff_code: 'RL.1',
                effective_from: '2020-02-01',
                cnae: '9820',
                params: { availability_discount: 0, consumption_discount: '5' },
              },
            ],
            readings: [
              {
                meter_serial_number: 'G-4471',
                interval_start: '2025-04-01T00:00:00Z',
                interval_end: '2025-05-01T00:00:00Z',
                consumption_delta: '412.5',
                source: 1,
              },
              {
                meter_serial_number: 'G-4471',
                interval_start: '2025-05-01T00:00:00Z',
                interval_end: '2025-06-01T00:00:00Z',
                consumption_delta: '298.75',
                source: 1,
              },
            ],
            billable_items: [
              {
                net_amount: 4.5,
                billable_item_type: 'METER_RENTAL',
                interval_start: '2025-06-01',
                interval_end: '2025-06-30',
                number_of_units: 1,
                price_per_unit: 4.5,
                unit_type: 'PER_ITEM',
              },
            ],
          },
        ],
      },
    ],
    notes: [
      {
        body: 'Prefiere contacto por correo electrónico.',
        created_at: '2024-03-01T10:00:00Z',
        is_pinned: true,
        unpin_at: '2025-12-31T00:00:00Z',
      },
    ],
    ledgers: KINDS.map((kind) => ledger(kind, months)),
    payment_schedules: [{ means: 'DIRECT_DEBIT', start_date: '2019-07-01', trigger: 'BILL' }],
    statements: [
      {
        bill_period_from_date: '2025-02-01',
        bill_period_to_date: '2025-02-28',
        statement_path: `statements/2025/02/${EXAMPLE_ACCOUNT}.pdf`,
        statement_id: 'ST-2025-02',
        supply_type: 'ELECTRICITY',
      },
    ],
    metadata: [{ key: 'legacy_system', value: { name: 'SAP-ISU', batch: 7, tags: ['paper-free'] } }],
    references: [{ namespace: 'legacy_contract', value: 'C-99887766' }],
    billing_name: 'Lucía Fernández Ruiz',
    billing_address1: 'Calle Colón 22, 4A',
    billing_address4: 'Valencia',
    billing_postcode: '46004',
    sales_channel: 'PARTNERS',
    sales_subchannel: 'Comparador Luz y Gas',
    communication_preference: 'ONLINE',
  };
}
