import type { z } from 'zod';
import { attrOf, type FieldError, type PathSegment } from './field-error.js';
import { allowedValuesHint } from '../../vocabulary/catalogue.js';
import { ruleCodes, type RuleCode } from './rule-catalogue.js';

type Issue = z.core.$ZodIssue;

function lookup(input: unknown, path: readonly PropertyKey[]): { found: boolean; value: unknown } {
  let current: unknown = input;
  for (const key of path) {
    // Own properties only: a path segment such as "constructor" must not reach the prototype.
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key)) {
      return { found: false, value: undefined };
    }
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return { found: current !== undefined, value: current };
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

function expectedLabel(issue: Issue): string {
  if (issue.code === 'invalid_union') return 'a number or decimal string';
  if (issue.code === 'invalid_type') return issue.expected === 'int' ? 'an integer' : `a ${issue.expected}`;
  return 'another type';
}

// Echo scalars only, shortened: the input may be huge or deeply nested.
function quote(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return `A value of type ${jsonType(v)}`;
}

function toSegments(path: readonly PropertyKey[]): PathSegment[] {
  return path.map((p) => (typeof p === 'symbol' ? String(p) : p));
}

function mapOne(issue: Issue, input: unknown): FieldError[] {
  const attr = attrOf(toSegments(issue.path));
  const make = (code: RuleCode, detail: string): FieldError[] => [{ detail, code, attr }];
  const at = lookup(input, issue.path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        detail: 'Unexpected field.',
        code: 'unexpected_field',
        attr: attrOf([...toSegments(issue.path), key]),
      }));
    case 'invalid_type':
    case 'invalid_union':
      if (!at.found) return make('required', 'This field is required.');
      if (issue.code === 'invalid_type' && issue.expected === 'int' && typeof at.value === 'number') {
        return make('invalid_integer', 'Enter a whole number.');
      }
      return make('invalid_type', `Expected ${expectedLabel(issue)}, received ${jsonType(at.value)}.`);
    case 'invalid_value':
      return make(
        'invalid_choice',
        `${quote(at.value)} is not a valid choice; ${allowedValuesHint(issue.values.map(String))}`,
      );
    case 'too_big':
      if (issue.origin === 'string')
        return make('max_length', `Ensure this field has no more than ${issue.maximum} characters.`);
      if (issue.origin === 'array')
        return make('too_many_items', `Ensure this list has no more than ${issue.maximum} items.`);
      return make('invalid', issue.message);
    case 'too_small':
      if (issue.origin === 'string') return make('blank', 'This field may not be blank.');
      if (issue.origin === 'array')
        return make('min_items', `Ensure this list has at least ${issue.minimum} item(s).`);
      return make('min_value', `Ensure this value is greater than or equal to ${issue.minimum}.`);
    case 'invalid_format':
      return make('invalid', issue.message);
    case 'custom': {
      const code: unknown = issue.params?.code;
      if (code === 'invalid_type' && !at.found) return make('required', 'This field is required.');
      if (code === 'invalid_type')
        return make('invalid_type', `Expected an object, received ${jsonType(at.value)}.`);
      return make(
        typeof code === 'string' && ruleCodes.has(code) ? (code as RuleCode) : 'invalid',
        issue.message,
      );
    }
    default:
      return make('invalid', issue.message);
  }
}

/** Maps zod issues to public field errors; `input` is the raw body, used to tell "missing" from "wrong type". */
export function issuesToFieldErrors(issues: readonly Issue[], input: unknown): FieldError[] {
  return issues.flatMap((issue) => mapOne(issue, input));
}
