import { Decimal } from 'decimal.js';
import { z } from 'zod';
import { defaultCatalogueValues, type CatalogueName } from '../vocabulary/catalogue.js';
import { normaliseIdentifier } from '../vocabulary/identifiers.js';
import {
  MONEY_INTEGER_DIGITS,
  MONEY_LIMIT_CENTS,
  MONEY_LIMIT_TEXT,
  withinMoneyLimit,
} from '../vocabulary/money.js';

// Building blocks shared by every payload schema. Custom failures carry `params.code`, which the
// validation layer turns into the public error code (see src/domain/validation/zod-issues.ts).

export const SHORT_TEXT = 255;
export const LONG_TEXT = 10_000;
export const PATH_TEXT = 1024;

/**
 * Characters a database refuses or that never belong in migrated text: NUL and the other C0 controls and DEL.
 * Free text (notes, long fields) keeps tab, newline and carriage return; every other string refuses them all.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001F\u007F]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_IN_FREE_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;
export const INVALID_CHARACTER = 'invalid_character';

export function controlCharacterIn(value: string, freeText = false): boolean {
  return (freeText ? CONTROL_IN_FREE_TEXT : CONTROL).test(value);
}

// The arguments of the `.refine` refusing control characters. A predicate rather than a `.superRefine`: the
// compiled parser calls a predicate directly, where a superRefine costs it a context object and a closure for
// every string (about a thousand per account).
const noControl = (freeText: boolean) =>
  [
    (value: string) => !controlCharacterIn(value, freeText),
    {
      message: freeText
        ? 'Control characters (other than tab, newline and carriage return) are not allowed.'
        : 'Control characters are not allowed.',
      params: { code: INVALID_CHARACTER },
    },
  ] as const;

/** Trimmed, non-blank string; blank means "not provided", which the interface says to omit instead. */
export const text = (max: number = SHORT_TEXT) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine(...noControl(max >= LONG_TEXT));

/**
 * An identifier that becomes part of a key (supplier code, external account number): trimmed, no control
 * characters, and in Unicode NFC, so that the same text typed two ways ("CAFÉ" composed or decomposed) is one key.
 */
export const identifier = (max: number) => text(max).transform(normaliseIdentifier);

const ZERO = 48; // '0'

/** The number written by `length` ASCII digits at `from`, or -1. */
function digitsAt(s: string, from: number, length: number): number {
  let n = 0;
  for (let i = from; i < from + length; i++) {
    const d = s.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

// Hand-rolled rather than regular expressions: every payload carries hundreds of dates.
function isCalendarDateAt(value: string, from: number): boolean {
  if (value.charCodeAt(from + 4) !== 45 || value.charCodeAt(from + 7) !== 45) return false; // '-'
  const y = digitsAt(value, from, 4);
  const mo = digitsAt(value, from + 5, 2);
  const d = digitsAt(value, from + 8, 2);
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  if (d <= 28) return true;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const daysInMonth = mo === 2 ? (leap ? 29 : 28) : mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
  return d <= daysInMonth;
}

/** YYYY-MM-DD naming a real calendar day. */
export function isCalendarDate(value: string): boolean {
  return value.length === 10 && isCalendarDateAt(value, 0);
}

/** YYYY-MM-DDTHH:MM:SSZ with a real calendar day and time. */
export function isUtcDatetime(value: string): boolean {
  if (value.length !== 20 || !isCalendarDateAt(value, 0)) return false;
  if (value.charCodeAt(10) !== 84 || value.charCodeAt(19) !== 90) return false; // 'T', 'Z'
  if (value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58) return false; // ':'
  const h = digitsAt(value, 11, 2);
  const m = digitsAt(value, 14, 2);
  const sec = digitsAt(value, 17, 2);
  return h >= 0 && h <= 23 && m >= 0 && m <= 59 && sec >= 0 && sec <= 59;
}

/** A moment as YYYY-MM-DDTHH:MM:SSZ, the form `isUtcDatetime` accepts (milliseconds dropped). */
export function formatUtcDatetime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const isoDate = z
  .string()
  .refine(isCalendarDate, {
    message: 'Enter a valid calendar date in the format YYYY-MM-DD.',
    params: { code: 'invalid_date' },
  })
  .meta({ format: 'date', description: 'A calendar date, YYYY-MM-DD.' });

export const isoDatetime = z
  .string()
  .refine(isUtcDatetime, {
    message: 'Enter a valid UTC datetime in the format YYYY-MM-DDTHH:MM:SSZ.',
    params: { code: 'invalid_datetime' },
  })
  .meta({
    format: 'date-time',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
    description: 'A UTC datetime to the second, YYYY-MM-DDTHH:MM:SSZ.',
  });

type DecimalOptions = { money?: boolean; nonNegative?: boolean };

const MAX_INT_DIGITS = 15;
const MAX_FRACTION_DIGITS = 10;
const INVALID_DECIMAL =
  'Enter a number or a decimal string such as "12.34" (at most 15 integer and 10 fraction digits).';

function fail(ctx: z.RefinementCtx, input: unknown, code: string, message: string): never {
  ctx.issues.push({ code: 'custom', message, input, params: { code } });
  return z.NEVER;
}

const isDigit = (c: number): boolean => c >= ZERO && c <= 57;

// 10^0 .. 10^10: every scale a decimal may have (MAX_FRACTION_DIGITS), all exact doubles.
const SCALES = Array.from({ length: MAX_FRACTION_DIGITS + 1 }, (_, k) => 10 ** k);
const MAX_UNITS = 10 ** MAX_INT_DIGITS; // 15 significant digits: every such decimal is a distinct double
// Money is held in exact cents (src/vocabulary/money.ts): at most 10 integer digits. 10^10 is an exact double, so
// a number is below it exactly when its decimal text is.
const MONEY_BOUND = 10 ** MONEY_INTEGER_DIGITS;
export const AMOUNT_OUT_OF_RANGE = 'amount_out_of_range';
const OUT_OF_RANGE = `Money amounts are at most ${MONEY_LIMIT_TEXT} either side of zero: a larger one cannot be held exactly.`;

/**
 * The canonical text of a finite JSON number without formatting it as a string first (`String(v)` of a
 * fraction is the costly shortest-round-trip algorithm). If `v` is the double nearest to units / 10^k
 * for some k <= maxPlaces and |units| < 10^15, that decimal is the only one of at most 15 significant
 * digits naming `v`, so it is exactly what `String(v)` would print; the smallest such k is its number of
 * fraction digits. Returns null when there is no such decimal (the caller then formats the number).
 */
function numberText(v: number, maxPlaces: number, money: boolean): string | null {
  for (let k = 0; k <= maxPlaces; k++) {
    const scale = SCALES[k]!;
    const units = Math.round(v * scale);
    if (units / scale !== v) continue; // division of exact integers rounds correctly: the nearest double
    const abs = units < 0 ? -units : units;
    if (abs >= MAX_UNITS) return null;
    const whole = Math.floor(abs / scale);
    let text = String(whole); // an integer: cheap to format
    if (k > 0) text += '.' + String(abs - whole * scale).padStart(k, '0');
    if (money) text += k === 0 ? '.00' : k === 1 ? '0' : '';
    return units < 0 ? '-' + text : text;
  }
  return null;
}

/**
 * Canonical decimal string of a JSON number or decimal string (-?\d{1,15}(\.\d{1,10})?, no float
 * arithmetic), with leading integer and trailing fraction zeros dropped; money keeps 2 places. A single
 * scan: this runs on every amount of a payload.
 */
function normaliseDecimal(v: number | string, opts: DecimalOptions, ctx: z.RefinementCtx): string {
  let s: string;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return fail(ctx, v, 'invalid_decimal', INVALID_DECIMAL);
    // Fast path for the usual amounts; anything it does not settle (too many places, a negative amount,
    // more than 15 digits) takes the exact string route below, which also reports the problem.
    if (!(opts.nonNegative && v < 0)) {
      const text = numberText(v, opts.money ? 2 : MAX_FRACTION_DIGITS, opts.money === true);
      if (text !== null && !(opts.money && (v >= MONEY_BOUND || v <= -MONEY_BOUND))) return text;
    }
    s = String(v); // shortest round-trip form: 0.1 stays "0.1"
    if (s.includes('e')) s = new Decimal(v).toFixed();
  } else {
    s = v;
  }
  const length = s.length;
  const sign = s.charCodeAt(0) === 45 ? 1 : 0; // '-'
  let i = sign;
  while (i < length && isDigit(s.charCodeAt(i))) i++;
  const intEnd = i;
  let fracEnd = i;
  if (i < length) {
    if (s.charCodeAt(i) !== 46) return fail(ctx, v, 'invalid_decimal', INVALID_DECIMAL); // '.'
    fracEnd = ++i;
    while (fracEnd < length && isDigit(s.charCodeAt(fracEnd))) fracEnd++;
    if (fracEnd !== length || fracEnd === i) return fail(ctx, v, 'invalid_decimal', INVALID_DECIMAL);
  }
  const fracStart = intEnd + 1;
  if (intEnd === sign || intEnd - sign > MAX_INT_DIGITS || fracEnd - fracStart > MAX_FRACTION_DIGITS)
    return fail(ctx, v, 'invalid_decimal', INVALID_DECIMAL);
  let intStart = sign;
  while (intStart < intEnd - 1 && s.charCodeAt(intStart) === ZERO) intStart++;
  const givenPlaces = fracEnd > fracStart ? fracEnd - fracStart : 0;
  while (fracEnd > fracStart && s.charCodeAt(fracEnd - 1) === ZERO) fracEnd--;
  const places = fracEnd > fracStart ? fracEnd - fracStart : 0;
  const negative = sign === 1 && (places > 0 || intEnd - intStart > 1 || s.charCodeAt(intStart) !== ZERO);
  if (opts.money && places > 2)
    return fail(ctx, v, 'too_many_decimal_places', 'Money has at most 2 decimal places.');
  if (opts.nonNegative && negative) return fail(ctx, v, 'negative_amount', 'Must not be negative.');
  if (opts.money && intEnd - intStart > MONEY_INTEGER_DIGITS)
    return fail(ctx, v, AMOUNT_OUT_OF_RANGE, OUT_OF_RANGE);
  // Already canonical (no leading zeros, no "-0", and exactly the places the output has): no new string.
  if (intStart === sign && negative === (sign === 1)) {
    if (opts.money ? givenPlaces === 2 : givenPlaces === places) return s;
  }
  let text = s.slice(intStart, intEnd);
  if (places > 0) text += s.slice(intEnd, fracEnd);
  if (negative) text = '-' + text;
  // Money keeps cents visible ("10.50"); other quantities use their shortest exact form.
  if (!opts.money) return text;
  return places === 0 ? text + '.00' : places === 1 ? text + '0' : text;
}

/** A JSON number or decimal string, normalised to a canonical decimal string (exact, never a float). */
export const decimal = (opts: DecimalOptions = {}) =>
  z
    .union([z.number(), z.string()])
    .transform((v, ctx) => normaliseDecimal(v, opts, ctx))
    .meta({
      description: opts.money
        ? `Money in euros: a JSON number or a decimal string with at most 2 decimal places${opts.nonNegative ? ', not negative' : ''} and at most ${MONEY_LIMIT_TEXT} either side of zero; answered as a string with exactly 2 ("10.50").`
        : 'A JSON number or a decimal string (at most 15 integer and 10 fraction digits); answered as an exact decimal string.',
    });

/** Money: at most 2 decimal places, output with exactly 2 ("10.50"). */
export const money = (opts: Omit<DecimalOptions, 'money'> = {}) => decimal({ ...opts, money: true });

/** A quantity the interface types as "decimal string": numbers are refused. */
export const decimalString = () => z.string().transform((v, ctx) => normaliseDecimal(v.trim(), {}, ctx));

export const integer = () => z.number().int();

/** Money as a whole number of cents (a statement's `gross_amount`), held to the same bound as money. */
export const cents = () =>
  z
    .number()
    .refine(withinMoneyLimit, {
      message:
        'Amounts in cents are at most 999,999,999,999 either side of zero: a larger one cannot be held exactly.',
      params: { code: AMOUNT_OUT_OF_RANGE },
      abort: true,
    })
    .int()
    .meta({ minimum: -MONEY_LIMIT_CENTS, maximum: MONEY_LIMIT_CENTS });

const MAX_JSON_DEPTH = 10;
const MAX_JSON_NODES = 2_000;

// Metadata is stored as serialized JSON, so keys such as "$ref" or "a.b" are data and round-trip as they
// are; keys that name prototype machinery are refused as a matter of principle (merges, lodash-style paths).
const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

function jsonObjectProblem(root: unknown): string | null {
  if (typeof root !== 'object' || root === null || Array.isArray(root)) return 'Expected a JSON object.';
  // Iterative walk: a hostile, deeply nested value must not exhaust the stack.
  const values: unknown[] = [root];
  const depths: number[] = [1];
  let nodes = 0;
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop()!;
    if (++nodes > MAX_JSON_NODES) return `The object has more than ${MAX_JSON_NODES} values.`;
    if (typeof value === 'string' && controlCharacterIn(value, true))
      return 'A value holds a control character other than tab, newline or carriage return.';
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_JSON_DEPTH) return `The object is nested more than ${MAX_JSON_DEPTH} levels deep.`;
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) {
        values.push(item);
        depths.push(depth + 1);
      }
      continue;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) return `Key "${key}" is not allowed.`;
      if (controlCharacterIn(key)) return 'A key holds a control character.';
      values.push((value as Record<string, unknown>)[key]);
      depths.push(depth + 1);
    }
  }
  return null;
}

/** A free-form JSON object (metadata values), bounded in size and depth, without prototype-machinery keys. */
export const jsonObject = () =>
  z
    .custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
      message: 'Expected a JSON object.',
      params: { code: 'invalid_type' },
    })
    .superRefine((v, ctx) => {
      const problem = jsonObjectProblem(v);
      if (problem)
        ctx.addIssue({ code: 'custom', message: problem, params: { code: 'invalid_metadata_value' } });
    });

export const TRANSACTION_TYPES = ['CHARGE', 'CREDIT', 'PAYMENT', 'REPAYMENT', 'SUPPLY_CHARGE'] as const;
export const SUPPLY_TYPES = ['GAS', 'ELECTRICITY'] as const;
export const BILLING_DOCUMENT_TYPES = ['ITEM_BASED', 'PERIOD_BASED'] as const;

export const importSupplierCode = () => identifier(32);
export const externalAccountNumber = () => identifier(128);

/**
 * A path parameter naming an identifier: the same rule as in a body (a control character is refused with
 * `invalid_character`, the text is NFC), without the trim (a path carries what the caller sent).
 */
export const pathIdentifier = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine(...noControl(false))
    .transform((v) => v.normalize('NFC'));

/**
 * A value of an open list (decisions: a catalogue): the defaults are documented here; a deployment may add
 * values, and `GET /v1/data-import/catalogue/` answers the list in force.
 */
export const choice = (name: CatalogueName, max = 64) =>
  text(max).meta({
    description:
      `One of the \`${name}\` catalogue: by default ${defaultCatalogueValues[name].join(', ')}. ` +
      'A deployment may add values; GET /v1/data-import/catalogue/ answers the values in force.',
  });
