import { createHash } from 'node:crypto';
import { normaliseIdentifier } from '../../vocabulary/identifiers.js';
import type { Answer, ApiClient } from './http.js';
import { identifyLine, type Identity } from './identity.js';
import type { InputLine } from './input.js';
import { fieldErrors, refusalOutcome, type Result } from './outcomes.js';
import type { ResumeState } from './state.js';
import { pause } from './stop.js';

export type ReadLine = Extract<InputLine, { ok: true }>;

/** What a line's result is made of beyond what the line itself gives (its number, account, attempts, time). */
export type Ending = Omit<Result, 'line' | 'attempts' | 'ms' | 'import_supplier' | 'external_account_number'>;

/** A status that keeps answering 404 this many times in a row names no account the service has. */
const MAX_NOT_FOUND = 10;

/**
 * One line of `migrate` while it is handled: the account it names (as the service keys it), the requests it
 * makes (counted), its waits (ended by `cancelled`), the bound on following its status, and its result,
 * recorded in the state file as soon as it is known.
 */
export class AccountLine {
  /** The account, trimmed and in NFC as the service keys it: the state and the status polls use this form. */
  readonly who: Identity;
  /** `<supplier>/<external>`, or null when the line does not name both. */
  readonly key: string | null;
  private readonly started = Date.now();
  private attempts = 0;
  private readonly polling = { deadline: 0, notFound: 0 };

  constructor(
    readonly line: ReadLine,
    private readonly api: ApiClient,
    private readonly state: ResumeState,
    private readonly options: { dryRun: boolean; pollTimeoutMs: number; cancelled: AbortSignal },
  ) {
    const named = identifyLine(line);
    const normal = (s: string | null) => (s === null ? null : normaliseIdentifier(s));
    this.who = {
      import_supplier: normal(named.import_supplier),
      external_account_number: normal(named.external_account_number),
    };
    this.key =
      this.who.import_supplier && this.who.external_account_number
        ? `${this.who.import_supplier}/${this.who.external_account_number}`
        : null;
  }

  /** The account's path under a status endpoint (`…/<supplier>/<external>/`). */
  accountPath(prefix: string): string {
    const { import_supplier: supplier, external_account_number: external } = this.who;
    return `${prefix}/${encodeURIComponent(supplier ?? '')}/${encodeURIComponent(external ?? '')}/`;
  }

  async send(method: string, path: string, body?: unknown, retry503 = true): Promise<Answer> {
    const answer = await this.api.request(method, path, body, { retry503 });
    this.attempts += answer.attempts;
    return answer;
  }

  /** Waits between polls; a run that gives the line up ends it here (`Interrupted`). */
  pause(ms: number): Promise<void> {
    return pause(ms, this.options.cancelled);
  }

  /** The line's result; recorded in the state unless it `failed` (a rerun sends it again either way). */
  finish(ending: Ending): Result {
    const result: Result = {
      line: this.line.line,
      ...this.who,
      ...ending,
      attempts: this.attempts,
      ms: Date.now() - this.started,
    };
    if (this.key && result.outcome !== 'failed') {
      const hash = createHash('sha256').update(this.line.text).digest('hex');
      this.state.record(this.key, hash, this.options.dryRun, result);
    }
    return result;
  }

  /** A refusal of stage, create or schedule, as the outcome its code means. */
  refused(answer: Answer): Result {
    const { outcome, kraken } = refusalOutcome(answer.status, answer.body);
    return this.finish({
      outcome,
      http_status: answer.status,
      kraken_account_number: kraken,
      errors: outcome === 'already_imported' || outcome === 'dry_run_ok' ? [] : fieldErrors(answer.body),
    });
  }

  created(httpStatus: number, krakenAccountNumber: string | null): Result {
    return this.finish({
      outcome: 'created',
      http_status: httpStatus,
      kraken_account_number: krakenAccountNumber,
      errors: [],
    });
  }

  /**
   * Whether the status may be read again: every wait for a status is bounded, by `pollTimeoutMs` from the first
   * poll and by `MAX_NOT_FOUND` 404s in a row.
   */
  pollBudgetLeft(httpStatus: number): boolean {
    if (this.polling.deadline === 0) this.polling.deadline = Date.now() + this.options.pollTimeoutMs;
    this.polling.notFound = httpStatus === 404 ? this.polling.notFound + 1 : 0;
    return this.polling.notFound < MAX_NOT_FOUND && Date.now() < this.polling.deadline;
  }

  /** The status did not become final within its bound: `failed`, `status_unknown`, the last status answer kept. */
  statusUnknown(httpStatus: number): Result {
    return this.finish({
      outcome: 'failed',
      http_status: httpStatus,
      kraken_account_number: null,
      errors: [{ code: 'status_unknown', attr: 'non_field_errors' }],
    });
  }

  /** A later line of an account an earlier line named: not sent, not recorded, pointing at the first line. */
  duplicateOf(firstLine: number): Result {
    return {
      line: this.line.line,
      ...this.who,
      outcome: 'duplicate_line',
      http_status: null,
      kraken_account_number: null,
      errors: [{ code: 'duplicate_line', attr: `line:${firstLine}` }],
      attempts: 0,
      ms: 0,
    };
  }
}
