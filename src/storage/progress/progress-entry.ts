import type { ProcessState } from '../../domain/import-process/state.js';

/** What the progress counts hold of one import process, and the changes noted before they are written. */

export type ProgressEntry = {
  /** Position of the newest event counted (-1: none, e.g. skipped before anything was staged). */
  q: number;
  /** v2 status, '' when none (only for a skipped process). */
  s: string;
  /** latest_error.code when ERRORED or DRY_RUN_ERRORED, else ''. */
  c: string;
  /** The paths of that failure, each once. */
  a: string[];
  /** Time of the last change, epoch ms. */
  t: number;
  /** Kraken account number when PROCESSED, else ''. */
  k: string;
  /** latest_error as JSON text, '' when none. */
  e: string;
  /** 1: marked skipped by an operator (counted apart). */
  x: number;
};

export type PendingChange =
  | { kind: 'event'; ext: string; seq: number; writer: string }
  | { kind: 'post'; id: string; resource: string; count: number; writer: string };

/** What the counts hold of a process whose history's head is `state` (null: nothing to count). */
export function entryOf(
  state: ProcessState,
  fallback: { krakenAccountNumber?: string | null; staged?: boolean; at?: Date } = {},
): ProgressEntry | null {
  const status =
    state.status ?? (fallback.krakenAccountNumber ? 'PROCESSED' : fallback.staged ? 'PENDING' : null);
  if (!status) return null;
  const failed = status === 'ERRORED' || status === 'DRY_RUN_ERRORED';
  const errors = failed ? (state.latestEvent?.data.errors as { attr?: unknown }[] | undefined) : undefined;
  const paths = [
    ...new Set((errors ?? []).map((e) => e.attr).filter((a): a is string => typeof a === 'string')),
  ];
  return {
    q: state.seq,
    s: status,
    c: failed ? (state.latestError?.code ?? 'unknown') : '',
    a: paths,
    t: (state.latestEvent?.occurredAt ?? fallback.at ?? new Date(0)).getTime(),
    k: status === 'PROCESSED' ? (state.krakenAccountNumber ?? fallback.krakenAccountNumber ?? '') : '',
    e: state.latestError ? JSON.stringify(state.latestError) : '',
    x: 0,
  };
}
