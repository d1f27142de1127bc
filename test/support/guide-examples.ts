import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The runnable examples of a markdown guide (docs/api.md). An example is a request and its answer, each
 * announced by an HTML comment on its own line (invisible when the guide is rendered):
 *
 *     <!-- example request POST /v1/data-import/notes/create/ -->
 *     ```json
 *     { ...the body... }
 *     ```
 *     <!-- example answer 201 varies=created_at -->
 *     ```json
 *     [ ...the answer... ]
 *     ```
 *
 * - `example request METHOD PATH`: POST needs a body, the ```json block that follows the marker or
 *   `body=FILE` (relative to the guide), and so does PUT; GET and DELETE have none. `poll`: the request is sent again until it is
 *   answered as documented (what a reader does while a task runs).
 * - `example answer STATUS`: the documented body is the ```json block that follows, `body=FILE`, or `empty`.
 *   `varies=key,key`: values of these keys (at any depth) change from run to run (times, tokens); they are
 *   compared by kind (the same JSON type and, for strings, the same format), not by value.
 * - Every request is followed by exactly one answer before the next request. A ```json block belongs to the
 *   marker only when it is the next non-blank line.
 *
 * Other ```json blocks of the guide are illustrations and are not run.
 */

export type GuideRequest = {
  line: number;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  poll: boolean;
};
export type GuideAnswer = { line: number; status: number; body?: unknown; empty: boolean; varies: string[] };
export type GuideExample = { request: GuideRequest; answer: GuideAnswer };

const MARKER = /^<!-- example (request|answer) (.*?) -->$/;

export class GuideFormatError extends Error {}

/** The examples of `text`, in order; `dir` is where `body=FILE` paths start. Throws on any malformed marker. */
export function parseGuideExamples(text: string, dir: string): GuideExample[] {
  const lines = text.split('\n');
  const examples: GuideExample[] = [];
  let pending: GuideRequest | null = null;
  const fail = (line: number, what: string): never => {
    throw new GuideFormatError(`line ${line}: ${what}`);
  };

  /** The ```json block right after line `i` (0-based), or undefined; the index after it. */
  const blockAfter = (i: number): { value: unknown; next: number } | undefined => {
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() === '') j++;
    if (lines[j] !== '```json') return undefined;
    const end = lines.indexOf('```', j + 1);
    if (end < 0) fail(j + 1, 'a ```json block that never ends');
    const source = lines.slice(j + 1, end).join('\n');
    try {
      return { value: JSON.parse(source) as unknown, next: end };
    } catch (err) {
      return fail(j + 2, `the block is not JSON: ${(err as Error).message}`);
    }
  };

  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    if (!text.startsWith('<!-- example')) continue;
    const line = i + 1;
    const match = MARKER.exec(text);
    if (!match) return fail(line, `not a marker: ${text}`);
    const kind = match[1]!;
    const words = match[2]!.split(/\s+/);
    // request: METHOD PATH options; answer: STATUS options.
    const options = words.slice(kind === 'request' ? 2 : 1);
    const allowed = kind === 'request' ? ['body', 'poll'] : ['body', 'varies', 'empty'];
    const unknown = options.filter((o) => !allowed.includes(o.split('=')[0]!));
    if (unknown.length > 0) fail(line, `unknown option(s) ${unknown.join(' ')}`);
    const option = (name: string) => options.find((o) => o.startsWith(`${name}=`))?.slice(name.length + 1);
    const file = option('body');
    const block = blockAfter(i);
    if (block && file) fail(line, 'both body= and a ```json block');
    const body = file ? (JSON.parse(readFileSync(resolve(dir, file), 'utf8')) as unknown) : block?.value;

    if (kind === 'request') {
      if (pending) fail(line, `the request of line ${pending.line} has no answer`);
      const [method, path] = words as [string, string | undefined];
      if (!['GET', 'POST', 'PUT', 'DELETE'].includes(method)) return fail(line, `method ${method}`);
      if (!path?.startsWith('/')) fail(line, `path ${path}`);
      const withBody = method === 'POST' || method === 'PUT';
      if (withBody && body === undefined) fail(line, `a ${method} without a body`);
      if (!withBody && body !== undefined) fail(line, `a ${method} with a body`);
      pending = {
        line,
        method: method as GuideRequest['method'],
        path: path!,
        body,
        poll: options.includes('poll'),
      };
    } else {
      if (!pending) return fail(line, 'an answer without a request');
      const status = Number(words[0]);
      if (!Number.isInteger(status) || status < 100 || status > 599) fail(line, `status ${words[0]}`);
      const empty = options.includes('empty');
      if (empty && body !== undefined) fail(line, 'an empty answer with a body');
      if (!empty && body === undefined) fail(line, 'an answer without a body (say `empty` if it has none)');
      const varies = option('varies');
      examples.push({
        request: pending,
        answer: { line, status, body, empty, varies: varies ? varies.split(',') : [] },
      });
      pending = null;
    }
    if (block) i = block.next;
  }
  if (pending) fail(pending.line, 'the last request has no answer');
  return examples;
}

const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
/** A created account's number: `A-` and 8 characters of 0-9A-F. */
export const ACCOUNT_NUMBER = /^A-[0-9A-F]{8}$/;
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]+$/;
const OBJECT_ID = /^[0-9a-f]{24}$/;

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value !== 'string') return typeof value;
  for (const [name, pattern] of [
    ['datetime', DATETIME],
    ['account number', ACCOUNT_NUMBER],
    ['token', JWT],
    ['object id', OBJECT_ID],
  ] as const)
    if (pattern.test(value)) return name;
  return 'string';
}

/**
 * How `actual` differs from the documented answer: [] when it matches. Keys must be the same, arrays as long, in
 * order, values equal, except the keys in `varies` (compared by kind). A documented account number stands for
 * the one the service gave: the first time it is seen it is bound (in `numbers`) to the actual one, and every
 * later appearance must be that same number.
 */
export function differences(
  documented: unknown,
  actual: unknown,
  varies: readonly string[],
  numbers: Map<string, string>,
  path = '',
): string[] {
  const at = path || '(the body)';
  if (typeof documented === 'string' && ACCOUNT_NUMBER.test(documented)) {
    if (typeof actual !== 'string' || !ACCOUNT_NUMBER.test(actual))
      return [`${at}: documented an account number, got ${JSON.stringify(actual)}`];
    const bound = numbers.get(documented);
    if (bound === undefined) numbers.set(documented, actual);
    else if (bound !== actual)
      return [`${at}: ${documented} stands for ${bound} (seen before), got ${actual}`];
    return [];
  }
  const key = path.split('.').pop()!;
  if (varies.includes(key) && kind(documented) !== 'object' && kind(documented) !== 'array')
    return kind(documented) === kind(actual)
      ? []
      : [`${at}: documented a ${kind(documented)}, got ${JSON.stringify(actual)} (a ${kind(actual)})`];
  if (Array.isArray(documented)) {
    if (!Array.isArray(actual)) return [`${at}: documented an array, got ${JSON.stringify(actual)}`];
    if (documented.length !== actual.length)
      return [
        `${at}: documented ${documented.length} items, got ${actual.length}: ${JSON.stringify(actual)}`,
      ];
    return documented.flatMap((d, i) => differences(d, actual[i], varies, numbers, `${path}[${i}]`));
  }
  if (typeof documented === 'object' && documented !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual))
      return [`${at}: documented an object, got ${JSON.stringify(actual)}`];
    const d = documented as Record<string, unknown>;
    const a = actual as Record<string, unknown>;
    const missing = Object.keys(d).filter((k) => !(k in a));
    const extra = Object.keys(a).filter((k) => !(k in d));
    const shape = [
      ...missing.map((k) => `${path ? `${path}.` : ''}${k}: documented, not answered`),
      ...extra.map((k) => `${path ? `${path}.` : ''}${k}: answered ${JSON.stringify(a[k])}, not documented`),
    ];
    return [
      ...shape,
      ...Object.keys(d)
        .filter((k) => k in a)
        .flatMap((k) => differences(d[k], a[k], varies, numbers, path ? `${path}.${k}` : k)),
    ];
  }
  return Object.is(documented, actual)
    ? []
    : [`${at}: documented ${JSON.stringify(documented)}, got ${JSON.stringify(actual)}`];
}
