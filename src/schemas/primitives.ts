import { Decimal } from 'decimal.js';
import { z } from 'zod';

// Building blocks shared by every payload schema. Custom failures carry `params.code`, which the
// validation layer turns into the public error code (see src/domain/validation/zod-issues.ts).

export const SHORT_TEXT = 255;
export const LONG_TEXT = 10_000;
export const PATH_TEXT = 1024;

/** Trimmed, non-blank string; blank means "not provided", which the interface says to omit instead. */
export const text = (max: number = SHORT_TEXT) => z.string().trim().min(1).max(max);

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE = /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$/;

export function isCalendarDate(value: string): boolean {
  const m = DATE_RE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (y < 1 || mo < 1 || mo > 12 || d < 1) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]!;
  return d <= daysInMonth;
}

export function isUtcDatetime(value: string): boolean {
  const m = DATETIME_RE.exec(value);
  return m !== null && isCalendarDate(m[1]!);
}

export const isoDate = z.string().refine(isCalendarDate, {
  message: 'Enter a valid calendar date in the format YYYY-MM-DD.',
  params: { code: 'invalid_date' },
});

export const isoDatetime = z.string().refine(isUtcDatetime, {
  message: 'Enter a valid UTC datetime in the format YYYY-MM-DDTHH:MM:SSZ.',
  params: { code: 'invalid_datetime' },
});

const DECIMAL_RE = /^(-?)(\d{1,15})(?:\.(\d{1,10}))?$/;

type DecimalOptions = { money?: boolean; nonNegative?: boolean };

/**
 * Canonical decimal string of a JSON number or decimal string, or null when it is not one. Pure string
 * work (no float arithmetic, and cheap enough for thousands of amounts per payload).
 */
function canonical(v: number | string): { text: string; places: number; negative: boolean } | null {
  let s: string;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) return null;
    s = String(v); // shortest round-trip form: 0.1 stays "0.1"
    if (s.includes('e')) s = new Decimal(v).toFixed();
  } else {
    s = v;
  }
  const m = DECIMAL_RE.exec(s);
  if (!m) return null;
  const int = m[2]!.replace(/^0+(?=\d)/, '');
  const frac = (m[3] ?? '').replace(/0+$/, '');
  const negative = m[1] === '-' && (int !== '0' || frac !== '');
  return { text: `${negative ? '-' : ''}${int}${frac ? `.${frac}` : ''}`, places: frac.length, negative };
}

function normaliseDecimal(v: number | string, opts: DecimalOptions, ctx: z.RefinementCtx): string {
  const fail = (code: string, message: string): string => {
    ctx.issues.push({ code: 'custom', message, input: v, params: { code } });
    return z.NEVER;
  };
  const d = canonical(v);
  if (d === null)
    return fail(
      'invalid_decimal',
      'Enter a number or a decimal string such as "12.34" (at most 15 integer and 10 fraction digits).',
    );
  if (opts.money && d.places > 2)
    return fail('too_many_decimal_places', 'Money has at most 2 decimal places.');
  if (opts.nonNegative && d.negative) return fail('negative_amount', 'Must not be negative.');
  // Money keeps cents visible ("10.50"); other quantities use their shortest exact form.
  if (!opts.money) return d.text;
  return d.places === 0 ? `${d.text}.00` : d.places === 1 ? `${d.text}0` : d.text;
}

/** A JSON number or decimal string, normalised to a canonical decimal string (exact, never a float). */
export const decimal = (opts: DecimalOptions = {}) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => normaliseDecimal(v, opts, ctx));

/** Money: at most 2 decimal places, output with exactly 2 ("10.50"). */
export const money = (opts: Omit<DecimalOptions, 'money'> = {}) => decimal({ ...opts, money: true });

/** A quantity the interface types as "decimal string": numbers are refused. */
export const decimalString = () => z.string().transform((v, ctx) => normaliseDecimal(v.trim(), {}, ctx));

export const integer = () => z.number().int();

const MAX_JSON_DEPTH = 10;
const MAX_JSON_NODES = 2_000;

function jsonObjectProblem(root: unknown): string | null {
  if (typeof root !== 'object' || root === null || Array.isArray(root)) return 'Expected a JSON object.';
  // Iterative walk: a hostile, deeply nested value must not exhaust the stack.
  const stack: { value: unknown; depth: number }[] = [{ value: root, depth: 1 }];
  let nodes = 0;
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (++nodes > MAX_JSON_NODES) return `The object has more than ${MAX_JSON_NODES} values.`;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_JSON_DEPTH) return `The object is nested more than ${MAX_JSON_DEPTH} levels deep.`;
    const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value);
    for (const [key, child] of entries) {
      // Keys like these would be read as database operators or prototype writes downstream.
      if (key.startsWith('$') || key.includes('.') || key === '__proto__')
        return `Key "${key.slice(0, 40)}" is not allowed.`;
      stack.push({ value: child, depth: depth + 1 });
    }
  }
  return null;
}

/** A free-form JSON object (metadata values), bounded in size and depth, with storage-safe keys. */
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

export const importSupplierCode = () => text(32);
export const externalAccountNumber = () => text(128);
