import { describe, expect, it } from 'vitest';
import { isValidEmail, isLikelyTestEmail } from '../../src/domain/region/email.js';
import { esProfile } from '../../src/domain/region/es.js';
import { getRegionProfile } from '../../src/domain/region/index.js';
import {
  cupsCheckLetters,
  isValidCif,
  isValidCups,
  isValidDni,
  isValidNie,
} from '../../src/domain/region/spanish-ids.js';
import { isIsoCountryCode } from '../../src/domain/region/countries.js';
import { documentPathProblem } from '../../src/domain/validation/rules/documents.js';
import { isCalendarDate, isUtcDatetime } from '../../src/schemas/primitives.js';

describe('Spanish identifiers', () => {
  it('DNI and NIE check letters', () => {
    expect(['12345678Z', '00000000T', '99999999R'].map(isValidDni)).toEqual([true, true, true]);
    expect(['12345678A', '1234567Z', '12345678z'].map(isValidDni)).toEqual([false, false, false]);
    expect(['X1234567L', 'Y1234567X', 'Z1234567R'].map(isValidNie)).toEqual([true, true, true]);
    expect(['X1234567A', 'W1234567L'].map(isValidNie)).toEqual([false, false]);
  });

  it('CIF control digit or letter by organisation type', () => {
    // Public bodies and companies whose CIFs are published (tax agency, Madrid city council, banks).
    expect(['Q2826000H', 'P2807900B', 'A58818501', 'A08015497', 'B12345674'].map(isValidCif)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(['Q28260008', 'A5881850J', 'B12345675', 'I12345674'].map(isValidCif)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });

  it('CUPS check letters match published examples', () => {
    expect(cupsCheckLetters('1234123456789012')).toBe('JY');
    expect(cupsCheckLetters('0291000000000001')).toBe('DN');
    expect(
      ['ES1234123456789012JY', 'ES1234123456789012JY1F', 'ES0291000000000001DN0F'].map(isValidCups),
    ).toEqual([true, true, true]);
    expect(
      [
        'ES1234123456789012XY',
        'ES0291000000000001DX0F',
        'ES1234123456789012JY1T',
        'FR1234123456789012JY',
        'es1234123456789012jy',
      ].map(isValidCups),
    ).toEqual([false, false, false, false, false]);
  });
});

describe('ES profile', () => {
  it('is selected by name; unknown regions are a configuration error', () => {
    expect(getRegionProfile('ES')).toBe(esProfile);
    expect(() => getRegionProfile('XX')).toThrow(/Unknown validation region/);
    expect(() => getRegionProfile('__proto__')).toThrow(/Unknown validation region/);
  });

  it('phones: Spanish mobiles and landlines; the mobile field needs a mobile', () => {
    expect(
      ['+34 612 345 678', '612345678', '+34712345678'].map((n) => esProfile.phoneProblem(n, 'mobile')),
    ).toEqual([null, null, null]);
    expect(
      ['912345678', '+34 93 123 45 67', '612345678'].map((n) => esProfile.phoneProblem(n, 'landline')),
    ).toEqual([null, null, null]);
    expect(esProfile.phoneProblem('912345678', 'mobile')).toMatch(/mobile/);
    expect(
      ['12345', '+447911123456', 'abc', '+34 123 456 789'].map(
        (n) => esProfile.phoneProblem(n, 'landline') !== null,
      ),
    ).toEqual([true, true, true, true]);
  });

  it('postcodes: 5 digits, province 01 to 52', () => {
    expect(['28013', '01001', '52001', '08001'].map(esProfile.postcodeProblem)).toEqual([
      null,
      null,
      null,
      null,
    ]);
    expect(
      ['2801', '280130', '00123', '53001', 'AB123'].map((p) => esProfile.postcodeProblem(p) !== null),
    ).toEqual([true, true, true, true, true]);
  });
});

describe('generic formats', () => {
  it('e-mail validity and test addresses', () => {
    expect(['maria.garcia@correo-cliente.es', 'a+b@sub.dominio.com'].map(isValidEmail)).toEqual([true, true]);
    expect(['maria@', '@x.es', 'a b@x.es', 'a@x', 'a..b@x.es'].map(isValidEmail)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(
      ['test@correo.es', 'john@example.com', 'x@foo.test', 'prueba1@gmail.com', 'a@mailinator.com'].map(
        isLikelyTestEmail,
      ),
    ).toEqual([true, true, true, true, true]);
    expect(['maria.test@correo.es', 'contestador@correo.es'].map(isLikelyTestEmail)).toEqual([false, false]);
  });

  it('ISO 3166-1 alpha-2 countries, upper case', () => {
    expect(['ES', 'PT', 'FR', 'GB'].map(isIsoCountryCode)).toEqual([true, true, true, true]);
    expect(['es', 'XX', 'UK', 'ESP', ''].map(isIsoCountryCode)).toEqual([false, false, false, false, false]);
  });

  it('document paths stay under the supplier root', () => {
    expect(documentPathProblem('statements/2025/01/a.pdf')).toBeNull();
    for (const bad of [
      '/abs.pdf',
      '../up.pdf',
      'a/../../b.pdf',
      's3://bucket/a.pdf',
      'a//b.pdf',
      'a\\b.pdf',
      './a.pdf',
      'dir/',
      'a\u0000.pdf',
    ]) {
      expect(documentPathProblem(bad), bad).not.toBeNull();
    }
  });

  it('dates and datetimes are real and in the exact formats', () => {
    expect(['2024-02-29', '2000-02-29', '2025-12-31'].map(isCalendarDate)).toEqual([true, true, true]);
    expect(
      ['2023-02-29', '1900-02-29', '2024-13-01', '2024-1-01', '2024-01-01T00:00:00Z'].map(isCalendarDate),
    ).toEqual([false, false, false, false, false]);
    expect(isUtcDatetime('2024-02-29T23:59:59Z')).toBe(true);
    expect(
      [
        '2024-02-30T00:00:00Z',
        '2024-01-01T24:00:00Z',
        '2024-01-01T00:00:00.000Z',
        '2024-01-01T00:00:00+01:00',
        '2024-01-01T00:00Z',
      ].map(isUtcDatetime),
    ).toEqual([false, false, false, false, false]);
  });
});
