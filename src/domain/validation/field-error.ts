import type { RuleCode } from './rule-catalogue.js';

export type FieldError = { detail: string; code: string; attr: string };

/** attr used when the problem is the body as a whole (the convention of DRF-style error bodies). */
export const ROOT_ATTR = 'non_field_errors';

export type PathSegment = string | number;

export function attrOf(path: readonly PathSegment[]): string {
  return path.length === 0 ? ROOT_ATTR : path.join('.');
}

export function child(attr: string, ...segments: PathSegment[]): string {
  // Called for every field the rules look at, so plain concatenation rather than array joins.
  let out = attr;
  for (const s of segments) out = out === '' ? String(s) : `${out}.${s}`;
  return out;
}

/** Collects errors; only catalogued codes can be added. */
export class Findings {
  readonly errors: FieldError[] = [];

  add(code: RuleCode, attr: string, detail: string): void {
    this.errors.push({ detail, code, attr: attr === '' ? ROOT_ATTR : attr });
  }
}

function compareSegments(a: string, b: string): number {
  const na = /^\d+$/.test(a) ? Number(a) : NaN;
  const nb = /^\d+$/.test(b) ? Number(b) : NaN;
  if (!Number.isNaN(na) && !Number.isNaN(nb)) return na - nb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareAttrs(a: string, b: string): number {
  const sa = a.split('.');
  const sb = b.split('.');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const c = compareSegments(sa[i]!, sb[i]!);
    if (c !== 0) return c;
  }
  return sa.length - sb.length;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Deterministic order (attr with numeric indexes compared as numbers, then code, then detail), no repeats. */
export function sortErrors(errors: readonly FieldError[]): FieldError[] {
  const seen = new Set<string>();
  const unique = errors.filter((e) => {
    const key = `${e.attr}\u0000${e.code}\u0000${e.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort(
    (a, b) => compareAttrs(a.attr, b.attr) || cmp(a.code, b.code) || cmp(a.detail, b.detail),
  );
}
