import { formatCents, toCents } from '../../../vocabulary/money.js';
import type { Outcome, Result } from '../outcomes.js';
import type { ReportExtension } from '../report.js';

/** The accounts the page and the summary name per field (every one is in results.jsonl). */
const EXAMPLES_PER_FIELD = 5;

const COMPARED: ReadonlySet<Outcome> = new Set(['matched', 'mismatched']);

type FieldTally = {
  accounts: number;
  moneyCents: bigint | null;
  examples: { external_account_number: string; expected: string | number; actual: string | number }[];
};

/** What the files held beyond the accounts compared, for the summary (see `expectations.ts`). */
export type InputCounts = Record<
  string,
  { lines: number; applied: number; not_in_cohort: number; unreadable: number }
>;

/**
 * Reconcile's part of the report: the differences grouped by field (how many accounts, the money difference
 * of balance fields, the first accounts), the total money difference (exact cents), and what the files held
 * that was not compared (post-import lines of accounts outside the cohort, unreadable lines).
 */
export class DifferenceTally implements ReportExtension {
  readonly name = 'reconciliation';
  private readonly fields = new Map<string, FieldTally>();
  private moneyCents = 0n;
  private compared = 0;
  inputs: InputCounts = {};
  /** The batch requests' round trips (ms), for the summary's `read_back`. */
  batchMs: number[] = [];
  batchSize = 0;

  add(result: Result): void {
    if (COMPARED.has(result.outcome)) this.compared++;
    for (const d of result.differences ?? []) {
      let field = this.fields.get(d.field);
      if (!field) {
        field = { accounts: 0, moneyCents: null, examples: [] };
        this.fields.set(d.field, field);
      }
      field.accounts++;
      if (d.field.endsWith('.balance') && typeof d.expected === 'string' && typeof d.actual === 'string') {
        const delta = toCents(d.expected) - toCents(d.actual);
        const abs = delta < 0n ? -delta : delta;
        field.moneyCents = (field.moneyCents ?? 0n) + abs;
      }
      if (field.examples.length < EXAMPLES_PER_FIELD)
        field.examples.push({
          external_account_number: result.external_account_number ?? '',
          expected: d.expected,
          actual: d.actual,
        });
    }
    // The account's own total: its balances, and the whole balance of a ledger one side lacks.
    if (result.money_difference !== undefined) this.moneyCents += toCents(result.money_difference);
  }

  summary(): Record<string, unknown> {
    const byField = Object.fromEntries(
      [...this.fields.entries()]
        .sort((a, b) => b[1].accounts - a[1].accounts || a[0].localeCompare(b[0]))
        .map(([field, f]) => [
          field,
          {
            accounts: f.accounts,
            ...(f.moneyCents === null ? {} : { money_difference: formatCents(f.moneyCents) }),
            examples: f.examples,
          },
        ]),
    );
    return {
      accounts_compared: this.compared,
      money_difference: formatCents(this.moneyCents),
      by_field: byField,
      inputs: this.inputs,
      read_back: readBackSummary(this.batchMs, this.batchSize),
    };
  }
}

/** How the service's side was read: batches, their round trip (p50, max), and per account of a full batch. */
function readBackSummary(batchMs: readonly number[], batchSize: number) {
  const sorted = [...batchMs].sort((a, b) => a - b);
  const p50 = sorted.length === 0 ? 0 : sorted[Math.ceil(sorted.length / 2) - 1]!;
  return {
    batches: sorted.length,
    batch_size: batchSize,
    batch_ms_p50: Math.round(p50),
    batch_ms_max: Math.round(sorted.at(-1) ?? 0),
    ms_per_account_p50: batchSize > 0 ? Math.round((p50 / batchSize) * 100) / 100 : 0,
  };
}
