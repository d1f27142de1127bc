import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_DOCS_PATH, renderErrorDocs } from '../../scripts/gen-error-docs.js';
import { ruleCatalogue, ruleCodes } from '../../src/domain/validation/rule-catalogue.js';
import { testContext } from './fixtures.js';
import { run } from './scenarios.js';
import { accountRuleScenarios } from './scenarios-account.js';
import { accountSchemaScenarios } from './scenarios-account-schema.js';
import { postImportScenarios } from './scenarios-post-import.js';

const scenarios = [...accountSchemaScenarios, ...accountRuleScenarios, ...postImportScenarios];
// The mapper's fallback for zod issue kinds the schemas never produce; kept so no issue goes unmapped.
const FALLBACK_ONLY = new Set(['invalid']);

describe('rule catalogue', () => {
  it('has unique snake_case codes with a description and an example attr', () => {
    expect(ruleCodes.size).toBe(ruleCatalogue.length);
    for (const r of ruleCatalogue) {
      expect(r.code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(r.description.length).toBeGreaterThan(10);
      expect(r.exampleAttr.length).toBeGreaterThan(0);
    }
  });

  it('contains every code the validators emit, and every code is emitted by some scenario', () => {
    const emitted = new Set(scenarios.flatMap((s) => run(s, testContext()).map((e) => e.code)));
    for (const code of emitted) expect(ruleCodes.has(code), code).toBe(true);
    const neverEmitted = [...ruleCodes].filter((c) => !emitted.has(c) && !FALLBACK_ONLY.has(c));
    expect(neverEmitted).toEqual([]);
  });

  it('docs/error-codes.md is generated from it and up to date', async () => {
    expect(readFileSync(ERROR_DOCS_PATH, 'utf8')).toBe(await renderErrorDocs());
  });
});
