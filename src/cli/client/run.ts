import type { Concurrency } from './concurrency.js';
import { KeyRefused } from './http.js';
import { identifyLine } from './identity.js';
import type { InputLine } from './input.js';
import type { Result } from './outcomes.js';
import type { Progress } from './progress.js';
import type { ReportWriter } from './report.js';
import { Interrupted, pause, type RunStop } from './stop.js';

type ReadLine = Extract<InputLine, { ok: true }>;

/**
 * Runs `handle` over the input lines with at most `concurrency.limit` in flight (a limit that may move while
 * the run goes, see concurrency.ts), recording each result as it comes.
 * At the end of the input every line in flight is waited for, however long (each is bounded by its own waits).
 * A stop (`stop`: Ctrl-C, SIGTERM, or the key refused mid-run, which stops it from here) ends the reading of new
 * lines; the lines in flight may finish until `stop.cancelled`, and those it cuts short end `interrupted`.
 */
export async function runLines(
  input: AsyncIterable<InputLine>,
  options: { concurrency: Concurrency; stop: RunStop },
  handle: (line: ReadLine) => Promise<Result>,
  report: ReportWriter,
  progress: Progress,
): Promise<void> {
  const { stop } = options;
  const inFlight = new Set<Promise<void>>();
  const record = (result: Result) => {
    report.add(result);
    progress.tick(result.done_earlier === true);
  };
  for await (const line of input) {
    await report.drained();
    if (stop.stopped.aborted) break;
    if (!line.ok) {
      record(parseError(line.line));
      continue;
    }
    await room(inFlight, options.concurrency, stop.stopped);
    if (stop.stopped.aborted) break;
    const started = Date.now();
    const task = handle(line)
      .catch((err: unknown) => {
        if (err instanceof KeyRefused) stop.stop('key_refused');
        return unfinished(line, err, Date.now() - started);
      })
      .then(record);
    const tracked = task.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  // Settles: every wait of a line ends by itself, or with `Interrupted` once a stop's drain has run out.
  await Promise.all(inFlight);
}

/**
 * Resolves once one more line may start: fewer lines in flight than the limit, and no `Retry-After` of the
 * service still running (both end early when the run stops).
 */
async function room(inFlight: Set<Promise<void>>, concurrency: Concurrency, stopped: AbortSignal) {
  while (inFlight.size >= concurrency.limit) await Promise.race(inFlight);
  for (let hold = concurrency.holdMs(); hold > 0 && !stopped.aborted; hold = concurrency.holdMs())
    // silent-ok: a stop ends the wait (Interrupted); the caller sees `stopped` and reads no more lines.
    await pause(hold, stopped).catch(() => {});
}

/** A line that is not JSON: reported with its number, never sent. */
function parseError(line: number): Result {
  return {
    line,
    import_supplier: null,
    external_account_number: null,
    outcome: 'parse_error',
    http_status: null,
    kraken_account_number: null,
    errors: [{ code: 'parse_error', attr: 'non_field_errors' }],
    attempts: 0,
    ms: 0,
  };
}

/**
 * A line whose handling threw: `interrupted` when the run stopped under it (its drain ran out, or the key was
 * refused: it is not a failure of its own, and a rerun sends it again), else `failed` with the error's code.
 */
function unfinished(line: ReadLine, err: unknown, ms: number): Result {
  const stopped = err instanceof Interrupted || err instanceof KeyRefused;
  return {
    ...identifyLine(line),
    line: line.line,
    outcome: stopped ? 'interrupted' : 'failed',
    http_status: null,
    kraken_account_number: null,
    errors: [{ code: errorCode(err), attr: 'non_field_errors' }],
    attempts: 0,
    ms,
  };
}

/**
 * The code a line that got no answer is reported with: `interrupted` (or the stop's own code, e.g.
 * `plan_window_ended`) or `api_key_refused` when the run stopped under it, the network error's, else `client_error`.
 */
export function errorCode(err: unknown): string {
  if (err instanceof Interrupted) return err.code;
  if (err instanceof KeyRefused) return 'api_key_refused';
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  return cause ? `network_error_${cause.toLowerCase()}` : 'client_error';
}
