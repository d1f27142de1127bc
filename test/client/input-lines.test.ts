import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { countLines, readJsonLines, textLines } from '../../src/cli/client/input.js';

/** A stream of `chunks` (Buffers) that counts how many it was asked for. */
function counted(chunks: Buffer[]) {
  const stats = { pulled: 0 };
  let i = 0;
  const stream = new Readable({
    highWaterMark: 1,
    read() {
      if (i >= chunks.length) return void this.push(null);
      stats.pulled++;
      this.push(chunks[i++]);
    },
  });
  return { stream, stats };
}

async function all(stream: Readable): Promise<string[]> {
  const out: string[] = [];
  for await (const line of textLines(stream)) out.push(line);
  return out;
}

async function readlineLines(chunks: Buffer[]): Promise<string[]> {
  const out: string[] = [];
  for await (const line of createInterface({ input: Readable.from(chunks), crlfDelay: Infinity }))
    out.push(line);
  return out;
}

describe('textLines', () => {
  it('splits as readline does: \\n, \\r\\n (also across chunks), a lone \\r, no final newline, multi-byte characters cut by a chunk', async () => {
    const text = 'uno\r\ndos\ntrés\rcuatro\r\n\r\ncinco ñ€\nseis';
    const bytes = Buffer.from(text, 'utf8');
    // Every way of cutting the text in two, and one byte a chunk.
    const cuts = [
      ...Array.from({ length: bytes.length + 1 }, (_, k) => [bytes.subarray(0, k), bytes.subarray(k)]),
      Array.from(bytes, (b) => Buffer.from([b])),
    ];
    for (const chunks of cuts) {
      const expected = await readlineLines(chunks);
      expect(expected).toEqual(['uno', 'dos', 'trés', 'cuatro', '', 'cinco ñ€', 'seis']);
      expect(await all(Readable.from(chunks))).toEqual(expected);
    }
  });

  it('reads the next chunk only once the lines of this one are taken (readline reads far ahead)', async () => {
    const chunks = Array.from({ length: 2_000 }, (_, i) => Buffer.from(`{"line":${i}}\n`));
    // One line taken, then 20 turns of the event loop in which a reader that reads ahead would read on.
    const pulledAfterOneLine = async (open: (stream: Readable) => AsyncIterator<string>) => {
      const source = counted(chunks);
      const lines = open(source.stream);
      expect((await lines.next()).value).toBe('{"line":0}');
      for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
      await lines.return?.();
      return source.stats.pulled;
    };
    // The stream's own buffer (one chunk here) and the chunk being split.
    expect(await pulledAfterOneLine((s) => textLines(s))).toBeLessThanOrEqual(3);
    // What this replaces: readline's iterator reads on while its first line waits.
    expect(
      await pulledAfterOneLine((s) =>
        createInterface({ input: s, crlfDelay: Infinity })[Symbol.asyncIterator](),
      ),
    ).toBeGreaterThan(100);
  });

  it('a file read through one reused buffer: lines longer than the buffer, and cut characters, come out whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'input-lines-'));
    try {
      const file = join(dir, 'cohort.jsonl');
      // 150 lines of 1 to 200 KB (the buffer is 64 KB), Spanish text cut anywhere by the reads.
      const values = Array.from({ length: 150 }, (_, i) => ({ i, body: 'añadió €'.repeat(100 + i * 170) }));
      writeFileSync(file, values.map((v) => JSON.stringify(v)).join('\n') + '\n\n');
      const read: unknown[] = [];
      for await (const line of readJsonLines(file)) {
        expect(line.ok).toBe(true);
        if (line.ok) read.push(line.value);
      }
      expect(read).toEqual(values);
      expect(await countLines(file)).toBe(150);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
