import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
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
  let n = 0;
  for await (const text of textLines(bytesOf(path))) {
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
 * The lines of a text (UTF-8 bytes), as readline splits them (`\r\n`, `\n` or a `\r` alone ends a line), read
 * no faster than they are taken: the next chunk is asked for once every line of this one is taken (readline's
 * own iterator reads ahead up to 1,024 lines: some 50 MB of realistic account payloads, held while the run
 * waits on the service). Holds one chunk and the line being read; a chunk may be reused once the next is asked for.
 */
export async function* textLines(chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const LINE_END = /\r\n?|\n/g;
  let partial = '';
  /** The last chunk ended with `\r`: a `\n` opening the next one ends no other line. */
  let afterCr = false;
  for await (const chunk of decoded(chunks)) {
    let from = afterCr && chunk.startsWith('\n') ? 1 : 0;
    afterCr = false;
    LINE_END.lastIndex = from;
    for (let end = LINE_END.exec(chunk); end !== null; end = LINE_END.exec(chunk)) {
      const line = partial + chunk.slice(from, end.index);
      partial = '';
      from = LINE_END.lastIndex;
      if (end[0] === '\r' && from === chunk.length) afterCr = true;
      yield line;
      LINE_END.lastIndex = from;
    }
    partial += chunk.slice(from);
  }
  if (partial !== '') yield partial;
}

/** UTF-8 bytes as text, chunk by chunk (a character cut between two chunks is joined). */
async function* decoded(chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  for await (const bytes of chunks) {
    const text = decoder.write(bytes);
    if (text !== '') yield text;
  }
  const rest = decoder.end();
  if (rest !== '') yield rest;
}

/**
 * The bytes of an input (`-`: standard input; `.gz`: decompressed). A plain file is read into one buffer of
 * `size` bytes, reused: each chunk is valid until the next is asked for, and a long run leaves no garbage
 * buffers behind it (a new 64 KB buffer a read is some 100,000 of them for a cohort of 100,000 accounts,
 * memory outside the JavaScript heap until a collection frees them).
 */
async function* bytesOf(path: string, size = 1 << 16): AsyncGenerator<Buffer> {
  if (path === '-') return yield* process.stdin as AsyncIterable<Buffer>;
  if (path.endsWith('.gz'))
    return yield* createReadStream(path).pipe(createGunzip()) as AsyncIterable<Buffer>;
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(size);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, size, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}

/**
 * How many lines that are not blank a file holds (decompressed for `.gz`), read once more in chunks as the run
 * starts, for the progress's total; null for standard input (it can be read only once). A line holding only
 * spaces counts: the run skips it, so the total is then one too many for it, never too few.
 */
export async function countLines(path: string): Promise<number | null> {
  if (path === '-') return null;
  let lines = 0;
  let open = false;
  for await (const chunk of bytesOf(path, 1 << 20)) {
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
