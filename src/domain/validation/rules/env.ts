import type { RegionProfile } from '../../region/index.js';
import { allowedValuesHint, type Catalogue, type CatalogueName } from '../../../vocabulary/catalogue.js';
import { child, type Findings } from '../field-error.js';
import type { RuleCode } from '../rule-catalogue.js';

/** Everything a rule needs; rules are pure functions of the payload and this. */
export type RuleEnv = {
  out: Findings;
  region: RegionProfile;
  catalogue: Catalogue;
  /** YYYY-MM-DD, injected so that "in the future" is decided by the caller's clock. */
  today: string;
  isComplete: (value: object | undefined) => boolean;
};

export const quote = (v: string): string => JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);

// `field`, when given, is appended to `attr` only if there is an error: the hot loops build no paths.
export function checkChoice(
  env: RuleEnv,
  name: CatalogueName,
  value: string | undefined,
  attr: string,
  field?: string,
): void {
  if (value === undefined || env.catalogue[name].has(value)) return;
  const at = field === undefined ? attr : child(attr, field);
  env.out.add(
    'invalid_choice',
    at,
    `${quote(value)} is not a valid choice for ${name}; ${allowedValuesHint(env.catalogue[name])}`,
  );
}

/** Dates and datetimes in their fixed ISO formats compare correctly as strings. */
export function checkOrder(
  env: RuleEnv,
  start: string | undefined,
  end: string | undefined,
  attr: string,
  field?: string,
): void {
  if (start !== undefined && end !== undefined && start > end) {
    env.out.add(
      'start_date_later_than_end_date',
      field === undefined ? attr : child(attr, field),
      `The start (${start}) is later than the end (${end}).`,
    );
  }
}

/** Reports every occurrence after the first of a repeated key. */
export function checkUnique(
  env: RuleEnv,
  entries: readonly { key: string | undefined; attr: string }[],
  code: RuleCode,
  label: string,
): void {
  const seen = new Set<string>();
  for (const { key, attr } of entries) {
    if (key === undefined) continue;
    if (seen.has(key)) env.out.add(code, attr, `Duplicate ${label} ${quote(key)}.`);
    seen.add(key);
  }
}

/** Calls `fn` for each item that parsed, with its original index. */
export function eachParsed<T>(
  list: readonly (T | undefined)[] | undefined,
  fn: (item: T, index: number) => void,
): void {
  list?.forEach((item, index) => {
    if (item !== undefined) fn(item, index);
  });
}
