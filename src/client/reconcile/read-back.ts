import type { ActualFigures } from '../../domain/reconciliation/compare.js';
import type { ApiClient } from '../http.js';
import type { CohortAccount } from './expectations.js';

/** The most accounts one batch request may name (the service answers 400 `too_many_items` beyond). */
export const MAX_BATCH = 500;

/** The service's answer for one account: its figures, or why it has none. */
export type ReadBackAnswer =
  | { kind: 'figures'; figures: ActualFigures & { kraken_account_number: string } }
  | { kind: 'missing'; code: string }
  | { kind: 'failed'; httpStatus: number | null; errors: { code: string; attr: string }[] };

export type ReadBackOptions = { batchSize: number; concurrency: number; stop: AbortSignal };

type BatchItem = (ActualFigures & { kraken_account_number: string }) | { error: { code: string } };

/**
 * The service's side of a cohort, through `POST /v2/data-import/accounts/reconciliation/`: the accounts of each
 * supplier in batches of `batchSize` (in cohort order), `concurrency` batches in flight. Each account's answer
 * goes to `onAnswer` with the batch's round trip and attempts; a batch the service refuses, or that cannot be
 * sent, answers `failed` for each of its accounts. Stops sending batches once `stop` is aborted.
 */
export async function readBack(
  api: ApiClient,
  accounts: Iterable<CohortAccount>,
  options: ReadBackOptions,
  onAnswer: (account: CohortAccount, answer: ReadBackAnswer, batch: { ms: number; attempts: number }) => void,
): Promise<{ batchMs: number[] }> {
  const bySupplier = new Map<string, CohortAccount[]>();
  for (const a of accounts) {
    const list = bySupplier.get(a.supplier) ?? [];
    list.push(a);
    bySupplier.set(a.supplier, list);
  }
  const batches: CohortAccount[][] = [];
  for (const list of bySupplier.values())
    for (let i = 0; i < list.length; i += options.batchSize)
      batches.push(list.slice(i, i + options.batchSize));

  const batchMs: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < batches.length && !options.stop.aborted) {
      const batch = batches[next++]!;
      const started = performance.now();
      let status: number | null = null;
      let body: unknown = null;
      let attempts = 0;
      let failure: { code: string; attr: string } | null = null;
      try {
        const answer = await api.request('POST', '/v2/data-import/accounts/reconciliation/', {
          import_supplier_code: batch[0]!.supplier,
          external_account_numbers: batch.map((a) => a.external),
        });
        ({ status, body, attempts } = answer);
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        failure = {
          code: cause ? `network_error_${cause.toLowerCase()}` : 'client_error',
          attr: 'non_field_errors',
        };
      }
      const ms = performance.now() - started;
      batchMs.push(ms);
      const results = status === 200 ? (body as { results?: BatchItem[] }).results : undefined;
      batch.forEach((account, i) => {
        const item = results?.[i];
        let answer: ReadBackAnswer;
        if (item && 'error' in item) answer = { kind: 'missing', code: item.error.code };
        else if (item) answer = { kind: 'figures', figures: item };
        else
          answer = {
            kind: 'failed',
            httpStatus: status,
            errors: failure ? [failure] : errorsOf(body, status),
          };
        onAnswer(account, answer, { ms, attempts });
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, batches.length) }, worker));
  return { batchMs };
}

/** The codes and paths of a refused batch (never details), or what was wrong with a 200 without results. */
function errorsOf(body: unknown, status: number | null): { code: string; attr: string }[] {
  const b = (body ?? {}) as { code?: string; errors?: { code: string; attr: string }[] };
  if (b.errors?.length) return b.errors.map(({ code, attr }) => ({ code, attr }));
  if (b.code) return [{ code: b.code, attr: 'non_field_errors' }];
  return [{ code: status === 200 ? 'unexpected_answer' : `http_${status}`, attr: 'non_field_errors' }];
}
