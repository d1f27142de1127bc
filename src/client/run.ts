import { identifyLine } from './identity.js';
import type { InputLine } from './input.js';
import type { Result } from './outcomes.js';
import type { Progress } from './progress.js';
import type { ReportWriter } from './report.js';

/** How long in-flight requests may finish after an interrupt before the run ends without them. */
export const DRAIN_MS = 30_000;

/**
 * Runs `handle` over the input lines with at most `concurrency` in flight, recording each result as it
 * comes. `stop` (Ctrl-C) ends the reading of new lines; the lines in flight may finish for up to `DRAIN_MS`.
 * Returns whether the run was stopped before the end of the input.
 */
export async function runLines(
  input: AsyncIterable<InputLine>,
  options: { concurrency: number; stop: AbortSignal },
  handle: (line: Extract<InputLine, { ok: true }>) => Promise<Result>,
  report: ReportWriter,
  progress: Progress,
): Promise<{ interrupted: boolean }> {
  const inFlight = new Set<Promise<void>>();
  const record = (result: Result) => {
    report.add(result);
    progress.tick(result.done_earlier === true);
  };
  let interrupted = false;
  for await (const line of input) {
    await report.drained();
    if (options.stop.aborted) {
      interrupted = true;
      break;
    }
    if (!line.ok) {
      record({
        line: line.line,
        import_supplier: null,
        external_account_number: null,
        outcome: 'parse_error',
        http_status: null,
        kraken_account_number: null,
        errors: [{ code: 'parse_error', attr: 'non_field_errors' }],
        attempts: 0,
        ms: 0,
      });
      continue;
    }
    const task = handle(line)
      .catch((err: unknown): Result => ({
        ...identifyLine(line),
        line: line.line,
        outcome: 'failed',
        http_status: null,
        kraken_account_number: null,
        errors: [{ code: errorCode(err), attr: 'non_field_errors' }],
        attempts: 0,
        ms: 0,
      }))
      .then(record);
    const tracked = task.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
  }
  if (options.stop.aborted) interrupted = true;
  await Promise.race([Promise.all(inFlight), new Promise((r) => setTimeout(r, DRAIN_MS).unref())]);
  return { interrupted };
}

/** The code a request that got no answer is reported with: the network error's, else `client_error`. */
export function errorCode(err: unknown): string {
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  return cause ? `network_error_${cause.toLowerCase()}` : 'client_error';
}
