import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/processes.js';
import { startTestApp, type TestApp } from './support/app.js';
import { childEnv } from './creation/processes.js';

const root = resolve(import.meta.dirname, '..');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'procs' } });
});
afterAll(async () => t.close());

/** Starts an entry point, collects its JSON log lines, resolves when `ready(line)` matches one. */
function run(entry: string, env: NodeJS.ProcessEnv, ready: (line: Record<string, unknown>) => boolean) {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Array<Record<string, unknown>> = [];
  const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const started = new Promise<void>((resolveStarted, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      for (const part of parts.filter(Boolean)) {
        const line = JSON.parse(part) as Record<string, unknown>;
        lines.push(line);
        if (ready(line)) resolveStarted();
      }
    });
    void exit.then((code) => reject(new Error(`${entry} exited with ${code} before it was ready`)));
  });
  return { child, lines, exit, started };
}

describe('process entry points', () => {
  it('web listens on PORT, logs JSON, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const web = run(
      'src/api/server.ts',
      childEnv(t.config, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' }),
      (l) => String(l.msg).startsWith('Server listening'),
    );
    await web.started;
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(res.status).toBe(200);
    web.child.kill('SIGTERM');
    expect(await web.exit).toBe(0);
    expect(web.lines.every((l) => typeof l.level === 'string' && typeof l.time === 'string')).toBe(true);
    expect(web.lines.some((l) => l.msg === 'closing' && l.signal === 'SIGTERM')).toBe(true);
  });

  it('worker starts every queue and exits 0 on SIGTERM', async () => {
    const worker = run(
      'src/workers/index.ts',
      childEnv(t.config, { LOG_LEVEL: 'info' }),
      (l) => l.msg === 'workers started',
    );
    await worker.started;
    const started = worker.lines.find((l) => l.msg === 'workers started');
    expect(started?.queues).toEqual([
      'account-creation',
      'payment-verification',
      'migration-email',
      'webhooks',
    ]);
    worker.child.kill('SIGTERM');
    expect(await worker.exit).toBe(0);
  });

  it('refuses to start with an invalid configuration, naming the variable', async () => {
    const bad = spawn(process.execPath, ['--import', 'tsx', 'src/api/server.ts'], {
      cwd: root,
      env: { ...childEnv(t.config), JWT_SECRET: 'short' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    bad.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((r) => bad.once('exit', r));
    expect(code).not.toBe(0);
    expect(stderr).toContain('JWT_SECRET: must be at least 32 characters');
  });
});
