import { expect, it } from 'vitest';
import { compare, orderOf, runsOf } from '../../bench/compare-runs.js';

// What `npm run bench:compare` reads out of a scenario's result and puts side by side.

const run = (accountsPerS: number, database: number, commands?: number) => ({
  accounts_per_s: accountsPerS,
  cpu_ms_per_account: { database, web: 2, worker: 3, redis: 0.5, client: 9 },
  ...(commands === undefined ? {} : { commands_per_account: { database: { total: commands } } }),
});

it('finds every run of a result, nested ones included, with the service CPU summed without the client', () => {
  const result = {
    realistic_1000: run(200, 2, 4.7),
    history_sweep: { months_12: run(230, 1.5), note: 'not a run' },
    accounts_per_s: 'not a number',
  };
  expect(runsOf(result)).toEqual([
    {
      path: 'realistic_1000',
      accountsPerS: 200,
      serviceCpuMs: 7.5,
      cpuMs: { database: 2, web: 2, worker: 3, redis: 0.5, client: 9 },
      databaseCommands: 4.7,
    },
    {
      path: 'history_sweep.months_12',
      accountsPerS: 230,
      serviceCpuMs: 7,
      cpuMs: { database: 1.5, web: 2, worker: 3, redis: 0.5, client: 9 },
      databaseCommands: null,
    },
  ]);
  // A scenario whose result is the run itself (scheduled).
  expect(runsOf(run(150, 3)).map((r) => r.path)).toEqual(['']);
});

it('gives each version its rounds in order and its means against the first version', () => {
  const measured = [
    { label: 'before', round: 2, runs: runsOf({ r: run(100, 4) }) },
    { label: 'after', round: 1, runs: runsOf({ r: run(150, 2) }) },
    { label: 'before', round: 1, runs: runsOf({ r: run(110, 3) }) },
    { label: 'after', round: 2, runs: runsOf({ r: run(160, 1) }) },
  ];
  const [r] = compare(measured, ['before', 'after']);
  expect(r!.path).toBe('r');
  expect(r!.versions[0]).toMatchObject({
    label: 'before',
    accountsPerS: [110, 100],
    serviceCpuMs: [8.5, 9.5],
    meanAccountsPerS: 105,
    meanServiceCpuMs: 9,
    throughputRatio: 1,
    cpuRatio: 1,
  });
  expect(r!.versions[1]).toMatchObject({
    label: 'after',
    accountsPerS: [150, 160],
    meanAccountsPerS: 155,
    serviceCpuMs: [7.5, 6.5],
    meanServiceCpuMs: 7,
    throughputRatio: 1.48,
    cpuRatio: 0.78,
  });
});

it('alternates the order of the versions from round to round (ABBA)', () => {
  expect(orderOf(['a', 'b', 'c'], 1)).toEqual(['a', 'b', 'c']);
  expect(orderOf(['a', 'b', 'c'], 2)).toEqual(['c', 'b', 'a']);
  expect(orderOf(['a', 'b'], 3)).toEqual(['a', 'b']);
});
