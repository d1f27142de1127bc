import { InvalidArgumentError, type Command } from 'commander';
import type { PlanFlags } from '../plan.js';
import { positiveInteger } from './context.js';

/** `--canary <N|off>`: digits (the service judges the range: 0 is refused at `canary_accounts`), or off. */
function canaryValue(value: string): PlanFlags['canary'] {
  if (value === 'off') return 'off';
  if (!/^[0-9]+$/.test(value)) throw new InvalidArgumentError('must be a whole number of accounts, or off.');
  return Number(value);
}

/** `--breaker <X/M|off>`: more than X % of the last M finished accounts errored (the service judges the range). */
function breakerValue(value: string): PlanFlags['breaker'] {
  if (value === 'off') return 'off';
  const match = /^([0-9]+(?:\.[0-9]+)?)\/([0-9]+)$/.exec(value);
  if (!match) throw new InvalidArgumentError('must be X/M (more than X % of the last M accounts), or off.');
  return { error_percent: Number(match[1]), over_accounts: Number(match[2]) };
}

/** Adds the plan flags to `migrate`. */
export function planOptions(command: Command): Command {
  return command
    .option(
      '--expected-accounts <n>',
      "the cohort's accounts for the plan (default: the file's lines; standard input: no plan without it)",
      positiveInteger,
    )
    .option('--window-start <datetime>', "the plan's window start (e.g. 2026-12-05T22:00:00Z)")
    .option('--window-end <datetime>', "the plan's window end: no account starts after it")
    .option('--no-window', 'declare the plan without a window (clears the one declared before)')
    .option('--canary <n|off>', 'pause after the first N accounts PROCESSED, until approved', canaryValue)
    .option(
      '--breaker <X/M|off>',
      'pause when more than X % of the last M finished accounts errored',
      breakerValue,
    )
    .option('--no-plan', 'declare no cohort plan');
}
