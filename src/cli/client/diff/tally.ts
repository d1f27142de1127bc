import { categories, type AccountDiff, type Category } from './classify.js';

/** The accounts the page lists (every one is in diff.jsonl). */
const MAX_LISTED = 1_000;

export type DiffSummary = {
  report: string;
  a: string;
  b: string;
  accounts: number;
  counts: Record<Category, number>;
  /** Per category (but still_ok), the error codes with their paths: of B, or of A for what B no longer has. */
  by_code: Partial<Record<Category, Record<string, { accounts: number; attrs: Record<string, number> }>>>;
};

/** The side whose errors a category is about: what fails in B, or what failed in A and no longer does. */
const sideOf = (d: AccountDiff) =>
  d.category === 'fixed' || d.category === 'fixed_mismatch' || d.category === 'only_in_a' ? d.a : d.b;

/** The counts of a diff, by category and by error code and path, and the first accounts for the page. */
export class DiffTally {
  readonly counts = Object.fromEntries(categories.map((c) => [c, 0])) as Record<Category, number>;
  private readonly codes = new Map<Category, Map<string, { accounts: number; attrs: Map<string, number> }>>();
  readonly listed: AccountDiff[] = [];
  accounts = 0;

  add(d: AccountDiff): void {
    this.accounts++;
    this.counts[d.category]++;
    if (d.category === 'still_ok') return;
    if (this.listed.length < MAX_LISTED) this.listed.push(d);
    const errors = sideOf(d)?.errors ?? [];
    if (errors.length === 0) return;
    const codes = this.codes.get(d.category) ?? new Map();
    this.codes.set(d.category, codes);
    const seen = new Set<string>();
    for (const { code, attr } of errors) {
      const c = codes.get(code) ?? { accounts: 0, attrs: new Map<string, number>() };
      codes.set(code, c);
      if (!seen.has(code)) c.accounts++;
      seen.add(code);
      c.attrs.set(attr, (c.attrs.get(attr) ?? 0) + 1);
    }
  }

  summary(paths: { report: string; a: string; b: string }): DiffSummary {
    const byCode: DiffSummary['by_code'] = {};
    for (const [category, codes] of this.codes)
      byCode[category] = Object.fromEntries(
        [...codes.entries()]
          .sort((x, y) => y[1].accounts - x[1].accounts || x[0].localeCompare(y[0]))
          .map(([code, c]) => [
            code,
            {
              accounts: c.accounts,
              attrs: Object.fromEntries([...c.attrs.entries()].sort((x, y) => y[1] - x[1])),
            },
          ]),
      );
    return { ...paths, accounts: this.accounts, counts: this.counts, by_code: byCode };
  }
}
