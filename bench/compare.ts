import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { compare, orderOf, runsOf, type Measured } from './compare-runs.js';

/**
 * `npm run bench:compare -- [--rounds n] [--env K=V ...] <scenario> <label>=<checkout> <label>=<checkout> ...`:
 * the same benchmark scenario in two or more checkouts of the project (the code before and after a change, each
 * built and run by its own `npm run bench`), alternating in rounds, ABBA, so that the machine's drift within
 * the hour falls on every version alike. Prints each version's accounts/s and service CPU per account per round
 * with their means against the first version's, and keeps every run's result file (`--out`). A checkout's own
 * `bench/results/<scenario>.json` is put back as it was after each run.
 */
const program = new Command('bench:compare')
  .argument('<scenario>', 'the scenario to run, e.g. creation-throughput')
  .argument('<versions...>', 'label=path of a checkout, two or more')
  .option('--rounds <n>', 'rounds (each runs every version once)', (v) => Number(v), 3)
  .option('--env <K=V>', 'environment for every run (repeatable)', (v, all: string[]) => [...all, v], [])
  .option('--out <dir>', 'where the runs are kept', join(tmpdir(), `bench-compare-${Date.now()}`))
  .parse();

const [scenario, specs] = program.processedArgs as [string, string[]];
const options = program.opts<{ rounds: number; env: string[]; out: string }>();
const versions = specs.map((spec) => {
  const at = spec.indexOf('=');
  if (at <= 0) program.error(`a version is label=path, got ${spec}`);
  const dir = resolve(spec.slice(at + 1));
  if (!existsSync(join(dir, 'bench', 'run.ts'))) program.error(`${dir} is not a checkout of this project`);
  return { label: spec.slice(0, at), dir };
});
if (versions.length < 2) program.error('give two versions or more');
if (!Number.isInteger(options.rounds) || options.rounds < 1)
  program.error('--rounds must be a positive integer');
const env = { ...process.env };
for (const pair of options.env) {
  const at = pair.indexOf('=');
  if (at <= 0) program.error(`--env takes K=V, got ${pair}`);
  env[pair.slice(0, at)] = pair.slice(at + 1);
}
mkdirSync(options.out, { recursive: true });

const measured: Measured[] = [];
for (let round = 1; round <= options.rounds; round++) {
  for (const { label, dir } of orderOf(versions, round)) {
    const resultFile = join(dir, 'bench', 'results', `${scenario}.json`);
    const kept = existsSync(resultFile) ? readFileSync(resultFile) : null;
    const run = spawnSync('npm', ['run', '--silent', 'bench', '--', scenario], {
      cwd: dir,
      env,
      encoding: 'utf8',
    });
    writeFileSync(join(options.out, `${label}-${round}.log`), `${run.stdout}\n${run.stderr}`);
    if (run.status !== 0) {
      console.error(`${label}, round ${round}: the benchmark failed (log in ${options.out})`);
      process.exit(1);
    }
    const record = readFileSync(resultFile, 'utf8');
    writeFileSync(join(options.out, `${label}-${round}.json`), record);
    if (kept) writeFileSync(resultFile, kept);
    const runs = runsOf((JSON.parse(record) as { result: unknown }).result);
    measured.push({ label, round, runs });
    for (const r of runs)
      console.log(
        `round ${round} ${label} ${r.path || scenario}: ${r.accountsPerS} accounts/s, ${r.serviceCpuMs} ms ` +
          `(${Object.entries(r.cpuMs)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})${r.databaseCommands === null ? '' : `, ${r.databaseCommands} database commands`}`,
      );
  }
}

const comparison = compare(
  measured,
  versions.map((v) => v.label),
);
for (const { path, versions: rows } of comparison) {
  console.log(`\n${path || scenario}`);
  for (const v of rows)
    console.log(
      `  ${v.label}: ${v.accountsPerS.join(', ')} accounts/s (mean ${v.meanAccountsPerS}, ×${v.throughputRatio}); ` +
        `${v.serviceCpuMs.join(', ')} ms (mean ${v.meanServiceCpuMs}, ×${v.cpuRatio})`,
    );
}
writeFileSync(
  join(options.out, 'comparison.json'),
  JSON.stringify({ scenario, options, measured, comparison }, null, 2),
);
console.log(`\nruns kept in ${options.out}`);
