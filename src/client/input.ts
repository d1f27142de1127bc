import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

export type InputLine =
  { line: number; ok: true; value: unknown; text: string } | { line: number; ok: false; error: string };

/**
 * The lines of a JSON Lines file (`.jsonl`, `.jsonl.gz`, or `-` for standard input), streamed: one parsed
 * value at a time, never the whole file. A line that is not JSON is reported with its number; blank lines
 * are skipped (and still counted).
 */
export async function* readJsonLines(path: string): AsyncGenerator<InputLine> {
  let stream: Readable = path === '-' ? process.stdin : createReadStream(path);
  if (path.endsWith('.gz')) stream = stream.pipe(createGunzip());
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  for await (const text of lines) {
    n++;
    if (text.trim() === '') continue;
    try {
      yield { line: n, ok: true, value: JSON.parse(text) as unknown, text };
    } catch (err) {
      yield { line: n, ok: false, error: (err as Error).message };
    }
  }
}
