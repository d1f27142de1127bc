import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { isPoisoned, parseJsonText } from '../../infra/validation-pool/json-body.js';

/** A line read; `value` is its parsed JSON, absent when reading without parsing (see `readJsonLines`). */
export type InputLine =
  { line: number; ok: true; value?: unknown; text: string } | { line: number; ok: false; error: string };

/**
 * The lines of a JSON Lines file (`.jsonl`, `.jsonl.gz`, or `-` for standard input), streamed: one parsed
 * value at a time (or, with `parse: false`, the text alone), never the whole file. A line that is not JSON is
 * reported with its number; blank lines are skipped (and still counted). JSON the service's parser refuses (prototype-poisoning keys) is a parse
 * error here as well, so offline validation and the server agree.
 */
export async function* readJsonLines(
  path: string,
  options: { parse: boolean } = { parse: true },
): AsyncGenerator<InputLine> {
  let stream: Readable = path === '-' ? process.stdin : createReadStream(path);
  if (path.endsWith('.gz')) stream = stream.pipe(createGunzip());
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    // Unparsed: the server judges the text (an unparsable line comes back as its `parse_error`).
    if (!options.parse) {
      yield { line: n, ok: true, text };
      continue;
    }
    try {
      // As the service parses bodies (Fastify's prototype-poisoning guard): a `__proto__` key, or a
      // `constructor` holding `prototype`, is refused as unparsable there, so it is here too.
      const value = parseJsonText(text);
      if (isPoisoned(text, value))
        throw new SyntaxError('prototype poisoning keys (__proto__, constructor.prototype)');
      yield { line: n, ok: true, value, text };
    } catch (err) {
      yield { line: n, ok: false, error: (err as Error).message };
    }
  }
}

/**
 * How many lines that are not blank a file holds (decompressed for `.gz`), read once more in chunks as the run
 * starts, for the progress's total; null for standard input (it can be read only once). A line holding only
 * spaces counts: the run skips it, so the total is then one too many for it, never too few.
 */
export async function countLines(path: string): Promise<number | null> {
  if (path === '-') return null;
  let stream: Readable = createReadStream(path, { highWaterMark: 1 << 20 });
  if (path.endsWith('.gz')) stream = stream.pipe(createGunzip());
  let lines = 0;
  let open = false;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let at = 0;
    for (let nl = chunk.indexOf(10, at); nl !== -1; nl = chunk.indexOf(10, at)) {
      const empty = nl === at || (nl === at + 1 && chunk[at] === 13);
      if (open || !empty) lines++;
      open = false;
      at = nl + 1;
    }
    if (at < chunk.length) open = true;
  }
  return open ? lines + 1 : lines;
}
