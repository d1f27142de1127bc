import { describe, expect, it } from 'vitest';
import { classify, type Side } from '../../src/cli/client/diff/classify.js';
import type { Outcome } from '../../src/cli/client/outcomes.js';

const side = (outcome: Outcome, ...codes: string[]): Side => ({
  line: 1,
  outcome,
  errors: codes.map((code) => ({ code, attr: code === 'mismatch' ? 'ledgers.E.balance' : 'x' })),
});

describe('diff: how an account went from run A to run B', () => {
  it('classifies migrate outcomes', () => {
    expect(classify(side('validation_failed', 'a'), side('created'))).toBe('fixed');
    expect(classify(side('validation_failed', 'a', 'b'), side('validation_failed', 'b', 'a'))).toBe(
      'still_failing_same_code',
    );
    expect(classify(side('validation_failed', 'a'), side('validation_failed', 'b'))).toBe(
      'still_failing_changed_code',
    );
    expect(classify(side('validation_failed', 'a'), side('failed', 'a'))).toBe('still_failing_changed_code');
    expect(classify(side('created'), side('supplier_closed', 'c'))).toBe('newly_failing');
    expect(classify(side('already_imported'), side('created'))).toBe('still_ok');
    expect(classify(side('created'), null)).toBe('only_in_a');
    expect(classify(null, side('failed', 'x'))).toBe('only_in_b');
  });

  it('classifies reconcile outcomes: mismatches fixed and new apart', () => {
    expect(classify(side('mismatched', 'mismatch'), side('matched'))).toBe('fixed_mismatch');
    expect(classify(side('matched'), side('mismatched', 'mismatch'))).toBe('newly_mismatched');
    expect(classify(side('not_created', 'account_not_found'), side('matched'))).toBe('fixed');
    expect(classify(side('matched'), side('not_created', 'account_not_found'))).toBe('newly_failing');
    expect(classify(side('mismatched', 'mismatch'), side('mismatched', 'mismatch'))).toBe(
      'still_failing_same_code',
    );
  });
});
