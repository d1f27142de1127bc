import { createReadStream, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { normaliseIdentifier } from '../../../vocabulary/identifiers.js';
import { UsageError } from '../http.js';
import { identifyLine, type Identity } from '../identity.js';
import type { InputLine } from '../input.js';
import { successes, type Outcome, type Result } from '../outcomes.js';

// The results of an earlier run, read back from its report: for `diff` (two runs side by side) and for
// `migrate --only failed-in:<report>` (the accounts that did not succeed in it).

/**
 * An account's key across runs: supplier code and external number as the service keys them (trimmed, NFC);
 * a line naming no account is known by its line number only (`line:<n>`), which a later run need not share.
 */
export function resultKey(who: Identity, line: number): string {
  const { import_supplier: supplier, external_account_number: external } = who;
  if (supplier === null || external === null) return `line:${line}`;
  return `${normaliseIdentifier(supplier)}/${normaliseIdentifier(external)}`;
}

/** `results.jsonl` of a report folder (or the file itself); a usage error when there is none. */
export function resultsPath(report: string): string {
  const path = existsSync(report) && statSync(report).isDirectory() ? join(report, 'results.jsonl') : report;
  if (!existsSync(path) || !statSync(path).isFile())
    throw new UsageError(`${report} holds no results.jsonl (give a report folder or its results.jsonl)`);
  return path;
}

/** The results of a report, one at a time, in the order the run wrote them. */
export async function* readResults(report: string): AsyncGenerator<Result> {
  const path = resultsPath(report);
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  let n = 0;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    try {
      yield JSON.parse(text) as Result;
    } catch {
      throw new UsageError(`${path}:${n} is not a result line (JSON)`);
    }
  }
}

/** Whether a result is a success (a line done in an earlier run is: it was created then). */
export const succeeded = (r: { outcome: Outcome }) => successes.has(r.outcome);

/**
 * The accounts of a report that did not succeed (every outcome but created, already_imported, dry_run_ok,
 * matched): what `--only failed-in:<report>` sends again. Lines naming no account are left out (nothing
 * names them in another file); they are counted in `unnamed`.
 */
export async function failedIn(report: string): Promise<{ keys: Set<string>; unnamed: number }> {
  const keys = new Set<string>();
  let unnamed = 0;
  for await (const r of readResults(report)) {
    if (succeeded(r)) continue;
    const key = resultKey(r, r.line);
    if (key.startsWith('line:')) unnamed++;
    else keys.add(key);
  }
  return { keys, unnamed };
}

/** The input lines naming one of `keys` (the others are not read further). */
export async function* onlyAccounts(
  input: AsyncIterable<InputLine>,
  keys: ReadonlySet<string>,
): AsyncGenerator<InputLine> {
  for await (const line of input)
    if (line.ok && keys.has(resultKey(identifyLine(line), line.line))) yield line;
}
