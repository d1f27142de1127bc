// Parsing a JSON body exactly as the API's other routes do through Fastify (secure-json-parse with
// onProtoPoisoning and onConstructorPoisoning set to 'error', see src/api/instance.ts), for bodies that
// are parsed off the event loop: the same texts are accepted and refused.

// A "__proto__" or "constructor" key, also written with \u escapes, followed by a colon.
const SUSPECT_PROTO =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const SUSPECT_CONSTRUCTOR =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

const hasOwn = (value: object, key: string): boolean => Object.prototype.hasOwnProperty.call(value, key);

/**
 * The JSON text without a leading byte order mark, parsed; throws a SyntaxError for empty or malformed
 * JSON. Prototype poisoning is not checked here: see `isPoisoned`.
 */
export function parseJsonText(text: string): unknown {
  if (text.length === 0)
    throw new SyntaxError('Body cannot be empty when content-type is set to application/json');
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

/**
 * Whether Fastify's parser would refuse the parsed `value` of `text` as prototype poisoning: an own
 * "__proto__" key anywhere, or an own "constructor" key holding an object with its own "prototype".
 */
export function isPoisoned(text: string, value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (!SUSPECT_PROTO.test(text) && !SUSPECT_CONSTRUCTOR.test(text)) return false;
  const stack: object[] = [value];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (hasOwn(node, '__proto__')) return true;
    const ctor = (node as Record<string, unknown>).constructor;
    if (hasOwn(node, 'constructor') && typeof ctor === 'object' && ctor !== null && hasOwn(ctor, 'prototype'))
      return true;
    for (const child of Object.values(node))
      if (typeof child === 'object' && child !== null) stack.push(child);
  }
  return false;
}
