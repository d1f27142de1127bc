import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFerretDb, type LocalServer } from '../support/processes.js';

// The FerretDB the tests and benchmarks start runs as scripts/up.sh runs it: its garbage collector at GOGC=400
// (FERRETDB_GOGC overrides it), the setting the README's benchmark figures are measured with.
let ferret: LocalServer;
beforeAll(async () => {
  ferret = await startFerretDb();
});
afterAll(async () => {
  await ferret?.stop();
});

it('runs FerretDB with its garbage collector at GOGC=400 unless FERRETDB_GOGC says otherwise', () => {
  const environ = readFileSync(`/proc/${ferret.pid}/environ`, 'utf8').split('\0');
  expect(environ).toContain(`GOGC=${process.env.FERRETDB_GOGC ?? '400'}`);
  const up = readFileSync(new URL('../../scripts/up.sh', import.meta.url), 'utf8');
  expect(up).toMatch(/GOGC="\$\{FERRETDB_GOGC:-400\}" nohup \.tools\/bin\/ferretdb/);
});
