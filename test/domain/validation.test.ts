import { describe, expect, it } from 'vitest';
import {
  validateAccount,
  validateNotesImport,
  validatePaymentInstruction,
} from '../../src/domain/validation/index.js';
import { buildCatalogue } from '../../src/vocabulary/catalogue.js';
import {
  largeAccountPayload,
  testContext,
  validAccountPayload,
  validNotesImport,
  validPaymentInstruction,
} from './fixtures.js';
import { deleteAt, setAt } from './json-path.js';

const ctx = testContext();

describe('validateAccount', () => {
  it('lists every problem at once, schema and rules together, sorted by attr', () => {
    const payload = validAccountPayload();
    setAt(payload, 'customers.0.landline', '12345');
    setAt(payload, 'customers.0.favourite_colour', 'blue');
    setAt(payload, 'ledgers.0.current_statement_transactions.1.amount', 'five');
    setAt(payload, 'ledgers.1.ledger_balance', '-20.11');
    setAt(payload, 'supply_addresses.0.supply_points.0.identifier', 'ES0217010103496537HX');
    deleteAt(payload, 'billing_address1');
    const result = validateAccount(payload, ctx);
    expect(result).toMatchInlineSnapshot(`
      {
        "errors": [
          {
            "attr": "billing_address1",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "customers.0.favourite_colour",
            "code": "unexpected_field",
            "detail": "Unexpected field.",
          },
          {
            "attr": "customers.0.landline",
            "code": "invalid_phone_number",
            "detail": "Enter a valid Spanish phone number.",
          },
          {
            "attr": "ledgers.0.current_statement_transactions.1.amount",
            "code": "invalid_decimal",
            "detail": "Enter a number or a decimal string such as "12.34" (at most 15 integer and 10 fraction digits).",
          },
          {
            "attr": "ledgers.1.ledger_balance",
            "code": "balance_mismatch_on_ledger_balance",
            "detail": "last_statement_balance plus current statement transactions is -20.10, not -20.11.",
          },
          {
            "attr": "supply_addresses.0.supply_points.0.identifier",
            "code": "invalid_cups",
            "detail": "Enter a valid CUPS: "ES", 16 digits and 2 check letters, upper case.",
          },
        ],
        "ok": false,
      }
    `);
  });

  it('runs the rules of the parts that parsed even when another part did not', () => {
    const payload = validAccountPayload();
    setAt(payload, 'ledgers.0.current_statement_transactions.0.type', 'GIFT'); // ledger 0 cannot be summed
    setAt(payload, 'ledgers.1.ledger_balance', 0); // ledger 1 still is
    setAt(payload, 'ledgers.1.$inc', 1); // and a stray key does not stop it either
    const result = validateAccount(payload, ctx);
    expect(result.ok ? [] : result.errors.map((e) => `${e.code} ${e.attr}`)).toEqual([
      'invalid_choice ledgers.0.current_statement_transactions.0.type',
      'unexpected_field ledgers.1.$inc',
      'balance_mismatch_on_ledger_balance ledgers.1.ledger_balance',
    ]);
  });

  it('answers a body that is not an object on non_field_errors', () => {
    expect(validateAccount([], ctx)).toMatchInlineSnapshot(`
      {
        "errors": [
          {
            "attr": "non_field_errors",
            "code": "invalid_type",
            "detail": "Expected a object, received array.",
          },
        ],
        "ok": false,
      }
    `);
    expect(validateAccount(null, ctx)).toMatchObject({
      ok: false,
      errors: [{ code: 'invalid_type', attr: 'non_field_errors' }],
    });
  });

  it('reports missing required top-level fields of an empty object', () => {
    expect(validateAccount({}, ctx)).toMatchInlineSnapshot(`
      {
        "errors": [
          {
            "attr": "account_type",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "billing_address1",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "billing_name",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "billing_postcode",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "customers",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "external_account_number",
            "code": "required",
            "detail": "This field is required.",
          },
          {
            "attr": "import_supplier",
            "code": "required",
            "detail": "This field is required.",
          },
        ],
        "ok": false,
      }
    `);
  });

  it('uses the injected today, not the machine clock', () => {
    const result = validateAccount(validAccountPayload(), testContext({ today: '2025-04-06' }));
    expect(result.ok ? [] : result.errors.map((e) => `${e.code} ${e.attr}`)).toEqual([
      'transaction_in_future ledgers.0.current_statement_transactions.1.transaction_date',
    ]);
  });

  it('accepts catalogue values a deployment adds, and only those', () => {
    const payload = validAccountPayload();
    setAt(payload, 'account_type', 'LANDLORD');
    expect(validateAccount(payload, ctx)).toMatchObject({
      ok: false,
      errors: [{ code: 'invalid_choice', attr: 'account_type' }],
    });
    expect(
      validateAccount(payload, testContext({ catalogue: buildCatalogue({ account_type: ['LANDLORD'] }) })),
    ).toMatchObject({ ok: true });
  });

  it('names the allowed values of an unknown choice when there are at most 20 of them', () => {
    const payload = validAccountPayload();
    setAt(payload, 'account_type', 'LANDLORD');
    setAt(payload, 'ledgers.0.current_statement_transactions.0.type', 'REFUND');
    const details = (c = ctx) => {
      const result = validateAccount(payload, c);
      return result.ok ? [] : result.errors.map((e) => `${e.attr}: ${e.detail}`);
    };
    expect(details()).toEqual([
      'account_type: "LANDLORD" is not a valid choice for account_type; expected one of DOMESTIC, BUSINESS.',
      'ledgers.0.current_statement_transactions.0.type: "REFUND" is not a valid choice; expected one of CHARGE, CREDIT, PAYMENT, REPAYMENT, SUPPLY_CHARGE.',
    ]);
    // A deployment's additions are named too, as long as the list stays short enough to read.
    const many = Array.from({ length: 19 }, (_, i) => `TYPE_${i + 1}`);
    expect(details(testContext({ catalogue: buildCatalogue({ account_type: many.slice(0, 18) }) }))[0]).toBe(
      `account_type: "LANDLORD" is not a valid choice for account_type; expected one of DOMESTIC, BUSINESS, ${many.slice(0, 18).join(', ')}.`,
    );
    expect(details(testContext({ catalogue: buildCatalogue({ account_type: many }) }))[0]).toBe(
      'account_type: "LANDLORD" is not a valid choice for account_type; 21 values are allowed; the catalogue lists them.',
    );
  });

  it('returns trimmed strings and keeps the input untouched', () => {
    const payload = validAccountPayload();
    setAt(payload, 'billing_name', '  María García López ');
    const before = structuredClone(payload);
    const result = validateAccount(payload, ctx);
    expect(result.ok && result.data.billing_name).toBe('María García López');
    expect(payload).toEqual(before);
  });

  it('metadata keys with "$" and "." are data: they validate and come back unchanged', () => {
    const value = {
      'a.b': 1,
      $ref: '#/definitions/legacy',
      nested: { $set: { 'x.y.z': [true, null, { $gt: '2024-01-01' }] }, '.': '', $: 0 },
    };
    const body = JSON.stringify({ ...validAccountPayload(), metadata: [{ key: 'legacy.json', value }] });
    const result = validateAccount(JSON.parse(body), ctx);
    expect(result.ok).toBe(true);
    expect(result.ok && result.data.metadata).toEqual([{ key: 'legacy.json', value }]);
    expect(JSON.stringify(result.ok && result.data.metadata?.[0]?.value)).toBe(JSON.stringify(value));
  });

  it('validates the benchmark account (200 transactions, about 50 KB)', () => {
    const payload = largeAccountPayload();
    const count = payload.ledgers.reduce(
      (n, l) => n + l.historical_statement_transactions.length + l.current_statement_transactions.length,
      0,
    );
    expect(count).toBe(200);
    expect(JSON.stringify(payload).length).toBeGreaterThan(45_000);
    expect(JSON.stringify(payload).length).toBeLessThan(60_000);
    expect(validateAccount(payload, ctx)).toMatchObject({ ok: true });
  });
});

describe('post-import bodies', () => {
  it('notes import error list', () => {
    const body = validNotesImport();
    setAt(body, 'notes.0', { is_pinned: 'yes' });
    setAt(body, 'notes.1.document_paths.0.document_path', '../x.pdf');
    expect(validateNotesImport(body, ctx)).toMatchInlineSnapshot(`
      {
        "errors": [
          {
            "attr": "notes.0.is_pinned",
            "code": "invalid_type",
            "detail": "Expected a boolean, received string.",
          },
          {
            "attr": "notes.1.document_paths.0.document_path",
            "code": "invalid_document_path",
            "detail": "Document paths must not contain empty, "." or ".." segments.",
          },
        ],
        "ok": false,
      }
    `);
  });

  it('payment instruction vendors come from the catalogue', () => {
    const body = validPaymentInstruction();
    setAt(body, 'vendor', 'ADYEN');
    expect(validatePaymentInstruction(body, ctx)).toMatchObject({ ok: false });
    const extended = testContext({ catalogue: buildCatalogue({ payment_instruction_vendor: ['ADYEN'] }) });
    expect(validatePaymentInstruction(body, extended)).toMatchObject({ ok: true });
  });
});
