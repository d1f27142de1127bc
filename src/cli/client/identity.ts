import type { InputLine } from './input.js';

/** Which account a line is about (null where the line does not say). */
export type Identity = { import_supplier: string | null; external_account_number: string | null };

/**
 * The account a line names (`import_supplier` or `import_supplier_code`, and `external_account_number`: string
 * members of the top-level object), read from its JSON text without parsing the rest. `migrate` sends each
 * line's text as it is and lets the server judge it, so it never needs the parsed account: parsing a 50 KB
 * account only to read two strings was the largest part of the client's CPU per account. Text that is not a
 * JSON object yields nulls as far as it goes (the server then answers `parse_error`).
 */
export function identifyText(text: string): Identity {
  const found = topLevelStrings(text, WANTED);
  return {
    import_supplier: found.import_supplier ?? found.import_supplier_code ?? null,
    external_account_number: found.external_account_number ?? null,
  };
}

/** The account a line names, from its parsed value or, when it was read unparsed, from its text. */
export function identifyLine(line: Extract<InputLine, { ok: true }>): Identity {
  return 'value' in line ? identify(line.value) : identifyText(line.text);
}

/** The account a value names, as far as it does. */
export function identify(value: unknown): Identity {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const str = (x: unknown) => (typeof x === 'string' ? x : null);
  return {
    import_supplier: str(v.import_supplier) ?? str(v.import_supplier_code),
    external_account_number: str(v.external_account_number),
  };
}

const WANTED: ReadonlySet<string> = new Set([
  'import_supplier',
  'import_supplier_code',
  'external_account_number',
]);

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * The string values of the wanted members of a top-level JSON object (the last one of a repeated name, as
 * JSON.parse keeps). Stops at the first thing that is not well-formed where it looks; what it found by then is
 * returned.
 */
function topLevelStrings(text: string, wanted: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = {};
  let i = skipSpace(text, text.charCodeAt(0) === 0xfeff ? 1 : 0);
  if (text[i] !== '{') return out;
  i = skipSpace(text, i + 1);
  if (text[i] === '}') return out;
  for (;;) {
    if (text[i] !== '"') return out;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0) return out;
    const key = decode(text, i, keyEnd);
    i = skipSpace(text, keyEnd);
    if (text[i] !== ':') return out;
    i = skipSpace(text, i + 1);
    const valueEnd = text[i] === '"' ? stringEnd(text, i) : skipValue(text, i);
    if (valueEnd < 0) return out;
    if (key !== null && wanted.has(key) && text[i] === '"') {
      const value = decode(text, i, valueEnd);
      if (value !== null) out[key] = value;
    } else if (key !== null && wanted.has(key)) delete out[key];
    i = skipSpace(text, valueEnd);
    if (text[i] === '}') return out;
    if (text[i] !== ',') return out;
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The index after the string starting at `start` (a `"`), or -1 when it does not end. */
function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c)
      i++; // a backslash escapes the next character
    else if (c === 0x22) return i + 1;
  }
  return -1;
}

/** The index after the value starting at `start` (object, array, number, literal), or -1 when it does not end. */
function skipValue(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return i; // the end of the enclosing object: the value (a literal) ended before it
      depth--;
      if (depth === 0) return i + 1;
    } else if (depth === 0 && (c === 0x2c || isSpace(c))) return i;
  }
  return depth === 0 ? text.length : -1;
}

/** The string between `start` and `end` (quotes included) as JSON reads it, or null when it is not valid. */
function decode(text: string, start: number, end: number): string | null {
  const raw = text.slice(start, end);
  if (!raw.includes('\\')) return raw.slice(1, -1);
  try {
    return JSON.parse(raw) as string;
  } catch {
    return null;
  }
}
