import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { isPoisoned, parseJsonText } from '../validation-pool/json-body.js';

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
