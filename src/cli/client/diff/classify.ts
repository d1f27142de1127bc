import type { FieldError, Outcome, Result } from '../outcomes.js';
import { readResults, resultKey, succeeded } from './results-file.js';

/**
 * How an account went from run A to run B (`import-client diff`). A success is created, already_imported,
 * dry_run_ok or matched; any other outcome did not succeed. Two reconcile reports add the mismatch cases:
 * matched in one and mismatched in the other is a `fixed_mismatch` or `newly_mismatched` (rather than fixed
 * or newly failing).
 */
export const categories = [
  'fixed',
  'still_failing_same_code',
  'still_failing_changed_code',
  'newly_failing',
  'fixed_mismatch',
  'newly_mismatched',
  'only_in_a',
  'only_in_b',
  'still_ok',
] as const;
export type Category = (typeof categories)[number];

/** One side of an account: its line, outcome, and what went wrong (error codes, or differing fields). */
export type Side = { line: number; outcome: Outcome; errors: FieldError[] };

export type AccountDiff = {
  category: Category;
  import_supplier: string | null;
  external_account_number: string | null;
  a: Side | null;
  b: Side | null;
};

/**
 * What went wrong on a side, as `{code, attr}`: its errors, or for a mismatched reconcile account each field
 * that differs (code `mismatch`, the field as its path).
 */
function sideOf(r: Result): Side {
  const differences = (r.differences ?? []).map((d) => ({ code: 'mismatch', attr: d.field }));
  return { line: r.line, outcome: r.outcome, errors: differences.length > 0 ? differences : r.errors };
}

/** The codes of a side, compared as a set (the same codes in another order are the same failure). */
const codesOf = (side: Side) =>
  [...new Set(side.errors.map((e) => (e.code === 'mismatch' ? `mismatch:${e.attr}` : e.code)))]
    .sort()
    .join(' ');

export function classify(a: Side | null, b: Side | null): Category {
  if (!a) return 'only_in_b';
  if (!b) return 'only_in_a';
  const okA = succeeded(a);
  const okB = succeeded(b);
  if (okA && okB) return 'still_ok';
  if (!okA && okB) return a.outcome === 'mismatched' && b.outcome === 'matched' ? 'fixed_mismatch' : 'fixed';
  if (okA && !okB)
    return a.outcome === 'matched' && b.outcome === 'mismatched' ? 'newly_mismatched' : 'newly_failing';
  return a.outcome === b.outcome && codesOf(a) === codesOf(b)
    ? 'still_failing_same_code'
    : 'still_failing_changed_code';
}

type Entry = { who: Pick<Result, 'import_supplier' | 'external_account_number'>; side: Side };

/**
 * One report's results by account. An account named by several lines (a `duplicate_line`) is one account,
 * failing when any of its lines did not succeed (the file needs a look, and `--only` sends it again).
 */
async function byAccount(report: string): Promise<Map<string, Entry>> {
  const accounts = new Map<string, Entry>();
  for await (const r of readResults(report)) {
    const key = resultKey(r, r.line);
    const known = accounts.get(key);
    if (known && !(succeeded(known.side) && !succeeded(r))) continue;
    // Only the account's names are kept, not the whole result line (100,000 of them are read per report).
    const who = { import_supplier: r.import_supplier, external_account_number: r.external_account_number };
    accounts.set(key, { who, side: sideOf(r) });
  }
  return accounts;
}

/**
 * Every account of A and B, classified, handed to `out` one at a time: B's accounts in B's order, then those
 * only in A. Holds A's results by account (a few dozen bytes each) and B's while it reads them.
 */
export async function diffReports(
  reportA: string,
  reportB: string,
  out: (diff: AccountDiff) => void,
): Promise<void> {
  const inA = await byAccount(reportA);
  const inB = await byAccount(reportB);
  const emit = (who: Entry['who'], a: Side | null, b: Side | null) =>
    out({
      category: classify(a, b),
      import_supplier: who.import_supplier,
      external_account_number: who.external_account_number,
      a,
      b,
    });
  for (const [key, b] of inB) {
    const a = inA.get(key);
    inA.delete(key);
    emit(b.who, a?.side ?? null, b.side);
  }
  for (const a of inA.values()) emit(a.who, a.side, null);
}
