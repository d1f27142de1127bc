import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { accountPayloadSchema } from '../../src/schemas/account.js';
import { sortErrors, type FieldError } from '../../src/domain/validation/field-error.js';
import { validateAccount } from '../../src/domain/validation/index.js';
import { ruleCodes } from '../../src/domain/validation/rule-catalogue.js';
import { validAccountArb } from './arbitraries.js';
import { bodies, type BodyName } from './scenarios.js';
import { largeAccountPayload, testContext, validAccountPayload } from './fixtures.js';
import { mutationArb, pathsOf } from './mutations.js';

const ctx = testContext();

function expectWellFormed(errors: FieldError[]): void {
  expect(errors.length).toBeGreaterThan(0);
  for (const e of errors) {
    expect(Object.keys(e).sort()).toEqual(['attr', 'code', 'detail']);
    expect(ruleCodes.has(e.code), e.code).toBe(true);
    expect(typeof e.detail === 'string' && e.detail.length > 0 && e.detail.length < 500).toBe(true);
    // Only an unexpected key that is itself "" can have an empty path.
    expect(typeof e.attr === 'string' && (e.attr.length > 0 || e.code === 'unexpected_field')).toBe(true);
  }
  expect(sortErrors(errors)).toEqual(errors);
}

describe('properties', () => {
  it('generated valid accounts validate', () => {
    fc.assert(
      fc.property(validAccountArb, (payload) => {
        const result = validateAccount(payload, ctx);
        expect(result.ok ? [] : result.errors).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('any mutation of a valid account is refused with well-formed errors, never a throw', () => {
    const base = validAccountPayload();
    fc.assert(
      fc.property(mutationArb(base, pathsOf(base)), ({ payload }) => {
        const result = validateAccount(payload, ctx);
        expect(result.ok).toBe(false);
        if (!result.ok) expectWellFormed(result.errors);
      }),
      { numRuns: 400 },
    );
  });

  // validate() parses with z.compile's generated parser; it must answer exactly as the runtime parser.
  it('the compiled account parser agrees with the runtime parser', () => {
    const compiled = z.compile(accountPayloadSchema);
    const base = validAccountPayload();
    const agree = (payload: unknown) => {
      const runtime = accountPayloadSchema.safeParse(payload);
      const fast = compiled.safeParse(payload);
      expect(fast.success).toBe(runtime.success);
      if (runtime.success && fast.success) expect(fast.data).toEqual(runtime.data);
    };
    fc.assert(fc.property(validAccountArb, agree), { numRuns: 100 });
    fc.assert(
      fc.property(mutationArb(base, pathsOf(base)), ({ payload }) => agree(payload)),
      { numRuns: 300 },
    );
    agree(JSON.parse(JSON.stringify(largeAccountPayload())));
  });

  it('arbitrary JSON never makes any validator throw', () => {
    const names = Object.keys(bodies) as BodyName[];
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.jsonValue({ maxDepth: 6 }), (name, value) => {
        const result = bodies[name].validate(value, ctx);
        if (!result.ok) expectWellFormed(result.errors);
      }),
      { numRuns: 300 },
    );
  });
});
