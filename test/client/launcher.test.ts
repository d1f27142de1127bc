import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { validAccountPayload } from '../domain/fixtures.js';

// The client's launcher (bin/import-client, what `npx import-client` runs) with the machine's own PATH: on this
// machine kind the first `node` there is Node 20, which has no node:sqlite. The launcher runs the client with the
// project's Node 24 (.tools/node, installed by the setup) or the machine's when it is recent enough.
const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../..');
const systemPath = '/usr/local/bin:/usr/bin:/bin';
const dir = mkdtempSync(join(tmpdir(), 'import-client-launcher-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('runs the client from any folder whatever Node the PATH has first', async () => {
  const file = join(dir, 'one.jsonl');
  writeFileSync(
    file,
    JSON.stringify({ ...validAccountPayload(), external_account_number: 'LAUNCH-1' }) + '\n',
  );
  const { stdout } = await run(
    join(root, 'bin/import-client'),
    ['validate', file, '--offline', '--report', join(dir, 'report'), '--quiet'],
    { cwd: dir, env: { PATH: systemPath, HOME: process.env.HOME } },
  );
  expect(JSON.parse(stdout)).toMatchObject({ lines: 1, outcomes: { dry_run_ok: 1 } });
  const help = await run(join(root, 'bin/import-admin'), ['--help'], {
    cwd: dir,
    env: { PATH: systemPath, HOME: process.env.HOME },
  });
  expect(help.stdout).toContain('Usage: import-admin');
});
