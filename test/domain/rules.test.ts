import { describe, expect, it } from 'vitest';
import { bodies, run, type BodyName } from './scenarios.js';
import { accountRuleScenarios } from './scenarios-account.js';
import { accountSchemaScenarios } from './scenarios-account-schema.js';
import { postImportScenarios } from './scenarios-post-import.js';
import { testContext } from './fixtures.js';

const ctx = testContext();

describe('valid bodies', () => {
  it.each(Object.keys(bodies) as BodyName[])('%s fixture validates', (name) => {
    const result = bodies[name].validate(bodies[name].build(), ctx);
    expect(result).toMatchObject({ ok: true });
  });
});

describe.each([
  ['account schema', accountSchemaScenarios],
  ['account rules', accountRuleScenarios],
  ['post-import bodies', postImportScenarios],
])('%s: breaking one rule gives exactly its error', (_group, scenarios) => {
  it.each(scenarios.map((s) => [s.name, s] as const))('%s', (_name, s) => {
    expect(run(s, ctx)).toEqual([{ code: s.code, attr: s.attr, detail: expect.any(String) }]);
  });
});
