import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { childEnv, startProcess, type Child } from '../creation/processes.js';
import { freePort, waitForPort } from '../support/processes.js';
import { createTenant, type TestApp } from '../support/app.js';

const root = resolve(import.meta.dirname, '../..');
const cli = resolve(root, 'src/client/cli.ts');

/** The real service for a client test: a `web` and a `worker` process on the test app's services. */
export async function startService(
  t: TestApp,
  extra: Record<string, string> = {},
  { worker = true }: { worker?: boolean } = {},
) {
  const port = await freePort();
  const env = childEnv(t.config, extra);
  const children: Child[] = [startProcess('web', { ...env, PORT: String(port), HOST: '127.0.0.1' })];
  if (worker) children.push(startProcess('worker', env));
  await waitForPort(port);
  return {
    baseUrl: `http://127.0.0.1:${port}`,
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
