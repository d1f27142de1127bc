import type { z } from 'zod';

/**
 * What the rules see: the parsed payload, or, when the schema failed, every part of it that parsed on its
 * own. Fields may be missing and array items `undefined` (indexes are preserved so `attr` paths stay true).
 */
export type Loose<T> = T extends readonly (infer U)[]
  ? (Loose<U> | undefined)[]
  : T extends object
    ? { [K in keyof T]?: Loose<T[K]> }
    : T;

export type Salvaged<T> = {
  data: Loose<T> | undefined;
  /** Whether an object or array parsed completely (its own sums and cross checks can then be trusted). */
  isComplete: (value: object | undefined) => boolean;
};

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
};

const defOf = (schema: z.ZodType): Def => (schema as unknown as { def: Def }).def;

function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    const def = defOf(current);
    if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType) {
      current = def.innerType;
    } else if (def.type === 'pipe' && def.in) {
      current = def.in;
    } else {
      return current;
    }
  }
}

type Piece = { value: unknown; complete: boolean };

function mark(complete: WeakSet<object>, piece: Piece): Piece {
  if (!piece.complete) return piece;
  // Everything inside a value that parsed is complete too; iterative, as parsed values are bounded anyway.
  const stack: unknown[] = [piece.value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || complete.has(v)) continue;
    complete.add(v);
    stack.push(...(Array.isArray(v) ? v : Object.values(v)));
  }
  return piece;
}

// A container is complete when every part it was given salvaged completely and the reassembled value
// passes its own schema again (required fields, list minimums, refinements). Unknown keys are dropped,
// so a stray field does not stop the rules that need the whole container (e.g. a ledger's balance).
function salvageValue(schema: z.ZodType, value: unknown, complete: WeakSet<object>): Piece {
  const parsed = schema.safeParse(value);
  if (parsed.success) return mark(complete, { value: parsed.data, complete: true });
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (
    def.type === 'object' &&
    def.shape &&
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value)
  ) {
    const out: Record<string, unknown> = {};
    let partsComplete = true;
    for (const [key, fieldSchema] of Object.entries(def.shape)) {
      if (!Object.hasOwn(value, key)) continue;
      const piece = salvageValue(fieldSchema, (value as Record<string, unknown>)[key], complete);
      if (piece.value !== undefined) out[key] = piece.value;
      partsComplete &&= piece.complete;
    }
    return mark(complete, { value: out, complete: partsComplete && inner.safeParse(out).success });
  }
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    const pieces = value.map((item) => salvageValue(def.element!, item, complete));
    const out = pieces.map((p) => p.value);
    const partsComplete = pieces.every((p) => p.complete);
    return mark(complete, { value: out, complete: partsComplete && inner.safeParse(out).success });
  }
  return { value: undefined, complete: false };
}

/** Re-parses a payload that failed its schema, piece by piece, keeping every piece that is valid alone. */
export function salvage<S extends z.ZodType>(schema: S, input: unknown): Salvaged<z.output<S>> {
  const complete = new WeakSet<object>();
  const data = salvageValue(schema, input, complete).value as Loose<z.output<S>> | undefined;
  return { data, isComplete: (v) => v !== undefined && complete.has(v) };
}

/** The view of a payload that parsed completely. */
export function parsedWhole<T>(data: T): Salvaged<T> {
  return { data: data as Loose<T>, isComplete: (v) => v !== undefined };
}
