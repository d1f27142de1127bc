import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { childEnv, startProcess, type Child } from '../creation/processes.js';
import { freePort, waitForPort } from '../support/processes.js';
import { createTenant, type TestApp } from '../support/app.js';

const root = resolve(import.meta.dirname, '../..');
const cli = resolve(root, 'src/cli/client/cli.ts');

/**
 * The real service for a client test: a `web` and a `worker` process on the test app's services. Without
 * `worker`, the worker is away (nothing is created) until `startWorker()`.
 */
export async function startService(
  t: TestApp,
  extra: Record<string, string> = {},
  { worker = true }: { worker?: boolean } = {},
) {
  const port = await freePort();
  const env = childEnv(t.config, extra);
  const children: Child[] = [startProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' })];
  const startWorker = () => children.push(startProcess('worker', env));
  if (worker) startWorker();
  await waitForPort(port);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    startWorker,
    async stop() {
      await Promise.all(children.map((c) => c.stop()));
    },
  };
}

export async function clientTenant(t: TestApp, org: string, supplier: string, team: string) {
  const tenant = await createTenant(t, org, supplier);
  await t.ops.ensureTeam(team);
  return tenant;
}

export type ClientRun = {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
};

/** Runs `import-client` as a process (as a user would); `onStart` gets the process (e.g. to signal it). */
export function runClient(
  args: string[],
  env: Record<string, string>,
  onStart?: (proc: ReturnType<typeof spawn>) => void,
): Promise<ClientRun> {
  return new Promise((resolvePromise) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.stdin.end();
    onStart?.(proc);
    proc.on('exit', (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

/** A line of a report's `results.jsonl`. */
export type ResultLine = {
  line: number;
  outcome: string;
  import_supplier: string | null;
  external_account_number: string | null;
  http_status: number | null;
  kraken_account_number: string | null;
  errors: { code: string; attr: string }[];
  attempts: number;
  done_earlier?: true;
};

/** The results of a report folder, in the order they finished (none when the file is empty). */
export function readResults(report: string): ResultLine[] {
  return readFileSync(join(report, 'results.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as ResultLine);
}

/** The report's `summary.json`. */
export function readSummary(report: string) {
  return JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as {
    by_outcome: Record<string, number>;
    interrupted: boolean;
    server_throttled: number;
    runs: { ended: string }[];
    lines: number;
    sent: number;
  };
}

/** The v1 status of an account (`IN_PROGRESS` while its create job waits or runs), asked of the test app. */
export async function v1Status(
  t: TestApp,
  headers: Record<string, string>,
  supplier: string,
  external: string,
) {
  const res = await t.app.inject({
    method: 'GET',
    url: `/v1/data-import/account-transfer-status/${supplier}/${encodeURIComponent(external)}/`,
    headers,
  });
  return res.statusCode === 200 ? (res.json() as { status: string }).status : null;
}
