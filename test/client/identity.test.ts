import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { identify, identifyText } from '../../src/cli/client/identity.js';

// `migrate` reads the account a line names from its text (it never parses the account): it must read what
// JSON.parse would, whatever else the line holds.
const wantedKeys = ['import_supplier', 'import_supplier_code', 'external_account_number'];
const tricky = fc.constantFrom('"', '\\', '{', '}', '[', ']', ',', ':', '\u00e9', '\u2028', '\n', ' ');
const str = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.array(fc.oneof(tricky, fc.string({ maxLength: 3 })), { maxLength: 8 }).map((p) => p.join('')),
);
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    str,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(str, fc.constantFrom(...wantedKeys)), tie('any'), { maxKeys: 4 }),
  ),
})).any;
const account = fc
  .tuple(
    fc.dictionary(fc.oneof(str, fc.constantFrom(...wantedKeys)), value, { maxKeys: 6 }),
    fc.record(
      {
        import_supplier: fc.oneof(str, value),
        import_supplier_code: str,
        external_account_number: fc.oneof(str, value),
      },
      { requiredKeys: [] },
    ),
  )
  .map(([a, b]) => ({ ...a, ...b }));

describe('identifyText', () => {
  it('reads what JSON.parse reads, however the line is laid out', () => {
    fc.assert(
      fc.property(account, fc.constantFrom(0, 1, 2, '\t'), (obj, indent) => {
        const line = JSON.stringify(obj, null, indent);
        expect(identifyText(line)).toEqual(identify(JSON.parse(line)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('escaped characters in names and values', () => {
    const line = '{"imp\\u006frt_supplier":"AC\\u004dE","x":"\\"}","external_account_number":"A\\\\B"}';
    expect(identifyText(line)).toEqual({ import_supplier: 'ACME', external_account_number: 'A\\B' });
  });

  it('never throws on text that is not JSON, and names nothing it could not read', () => {
    for (const line of [
      '',
      'nope',
      '{',
      '{"import_supplier"',
      '{"import_supplier":"AC',
      '[1,2]',
      '"x"',
      '{"a":[}',
    ])
      expect(identifyText(line)).toEqual({ import_supplier: null, external_account_number: null });
    expect(identifyText('{"import_supplier":"ACME","external_account_number":')).toEqual({
      import_supplier: 'ACME',
      external_account_number: null,
    });
  });
});
