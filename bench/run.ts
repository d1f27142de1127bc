import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startBenchEnv, type Scenario } from './support.js';

/**
 * `npm run bench [-- name ...]`: runs every scenario in bench/scenarios (or the named ones) against real
 * services and writes bench/results/<scenario>.json plus bench/results/summary.md.
 */
const dir = join(import.meta.dirname, 'scenarios');
const wanted = process.argv.slice(2);
const scenarios: Scenario[] = [];
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.ts'))
  .sort()) {
  const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: Scenario };
  if (wanted.length === 0 || wanted.includes(mod.default.name)) scenarios.push(mod.default);
}
if (scenarios.length === 0) throw new Error(`no scenario matches ${wanted.join(', ')}`);

// The web and worker processes run as the Procfile runs them, from the build (BENCH_FROM_SOURCE=1: through tsx).
if (process.env.BENCH_FROM_SOURCE !== '1') {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  process.env.CHILD_FROM_BUILD = '1';
}

const { env, stop } = await startBenchEnv(process.env);
const resultsDir = join(import.meta.dirname, 'results');
mkdirSync(resultsDir, { recursive: true });
const lines = [
  `# Benchmark results`,
  ``,
  `Run at ${new Date().toISOString()} on Node ${process.version}.`,
  ``,
];
try {
  for (const scenario of scenarios) {
    console.log(`\n== ${scenario.name}: ${scenario.description}`);
    const result = await scenario.run(env);
    const record = {
      scenario: scenario.name,
      description: scenario.description,
      at: new Date().toISOString(),
      result,
    };
    writeFileSync(join(resultsDir, `${scenario.name}.json`), JSON.stringify(record, null, 2) + '\n');
    console.log(JSON.stringify(result, null, 2));
    lines.push(
      `## ${scenario.name}`,
      '',
      scenario.description,
      '',
      '```json',
      JSON.stringify(result, null, 2),
      '```',
      '',
    );
  }
} finally {
  await stop();
}
if (wanted.length === 0) writeFileSync(join(resultsDir, 'summary.md'), lines.join('\n'));
process.exit(0);
