import type { ActualFigures } from '../../../domain/reconciliation/compare.js';
import type { ApiClient } from '../http.js';
import { errorCode } from '../run.js';
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
type Answered = (
  account: CohortAccount,
  answer: ReadBackAnswer,
  batch: { ms: number; attempts: number },
) => void;

/**
 * The service's side of a cohort, through `POST /v2/data-import/accounts/reconciliation/`: accounts are added as
 * the cohort file is read, and each supplier's accounts go out in batches of `batchSize` as soon as a batch is
 * full, `concurrency` batches in flight, so the service reads while the client still works out the expected side
 * (on a machine of few cores the two overlap rather than take turns); `add` holds the reader back while
 * `concurrency` full batches wait. `finish` sends the partial batches and
 * waits for every answer. A batch the service refuses, or that cannot be sent, answers `failed` for each of its
 * accounts. No batch is sent once `stop` is aborted.
 */
export class BatchReader {
  private readonly pending = new Map<string, CohortAccount[]>();
  private readonly queue: CohortAccount[][] = [];
  private readonly inFlight = new Set<Promise<void>>();
  readonly batchMs: number[] = [];

  constructor(
    private readonly api: ApiClient,
    private readonly options: ReadBackOptions,
    private readonly onAnswer: Answered,
  ) {}

  /**
   * Adds an account to its supplier's batch; resolves once fewer than `concurrency` full batches wait behind
   * those in flight, so a caller that awaits it reads its input no faster than the service answers (what waits
   * in memory is bounded: the batches in flight and queued, and one partial batch a supplier).
   */
  async add(account: CohortAccount): Promise<void> {
    const list = this.pending.get(account.supplier) ?? [];
    list.push(account);
    if (list.length >= this.options.batchSize) {
      this.pending.delete(account.supplier);
      this.enqueue(list);
    } else this.pending.set(account.supplier, list);
    // A task settles after its `finally` has sent the next batch: the queue is shorter each time round.
    while (this.queue.length >= this.options.concurrency && this.inFlight.size > 0)
      await Promise.race(this.inFlight);
  }

  /** Sends what is left and resolves once every batch is answered (or not sent, after `stop`). */
  async finish(): Promise<void> {
    for (const list of this.pending.values()) this.enqueue(list);
    this.pending.clear();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private enqueue(batch: CohortAccount[]): void {
    this.queue.push(batch);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight.size < this.options.concurrency && this.queue.length > 0) {
      if (this.options.stop.aborted) {
        this.queue.length = 0;
        return;
      }
      const batch = this.queue.shift()!;
      const task: Promise<void> = this.send(batch).finally(() => {
        this.inFlight.delete(task);
        this.pump();
      });
      this.inFlight.add(task);
    }
  }

  private async send(batch: CohortAccount[]): Promise<void> {
    const started = performance.now();
    let status: number | null = null;
    let body: unknown = null;
    let attempts = 0;
    let failure: { code: string; attr: string } | null = null;
    try {
      ({ status, body, attempts } = await this.api.request(
        'POST',
        '/v2/data-import/accounts/reconciliation/',
        {
          import_supplier_code: batch[0]!.supplier,
          external_account_numbers: batch.map((a) => a.external),
        },
      ));
    } catch (err) {
      failure = { code: errorCode(err), attr: 'non_field_errors' };
    }
    const ms = performance.now() - started;
    this.batchMs.push(ms);
    const results = status === 200 ? (body as { results?: BatchItem[] }).results : undefined;
    batch.forEach((account, i) => {
      const item = results?.[i];
      let answer: ReadBackAnswer;
      if (item && 'error' in item) answer = { kind: 'missing', code: item.error.code };
      else if (item) answer = { kind: 'figures', figures: item };
      else
        answer = { kind: 'failed', httpStatus: status, errors: failure ? [failure] : errorsOf(body, status) };
      this.onAnswer(account, answer, { ms, attempts });
    });
  }
}

/** The codes and paths of a refused batch (never details), or what was wrong with a 200 without results. */
function errorsOf(body: unknown, status: number | null): { code: string; attr: string }[] {
  const b = (body ?? {}) as { code?: string; errors?: { code: string; attr: string }[] };
  if (b.errors?.length) return b.errors.map(({ code, attr }) => ({ code, attr }));
  if (b.code) return [{ code: b.code, attr: 'non_field_errors' }];
  return [{ code: status === 200 ? 'unexpected_answer' : `http_${status}`, attr: 'non_field_errors' }];
}
