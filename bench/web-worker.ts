import type { Config } from '../src/config.js';
import { childEnv, startProcess } from '../test/creation/processes.js';
import { freePort, waitForPort } from '../test/support/processes.js';

/**
 * One web process (on a free port of 127.0.0.1) and one worker process on `config`'s services, `extra` added to
 * both environments (e.g. the OTEL_* variables); resolves once the web listens.
 */
export async function startWebAndWorker(config: Config, extra: Record<string, string> = {}) {
  const port = await freePort();
  const base = childEnv(config, extra);
  const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
  const worker = startProcess('worker', base);
  const stop = async () => {
    await Promise.all([web.stop(), worker.stop()]);
  };
  try {
    await waitForPort(port);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, baseUrl: `http://127.0.0.1:${port}`, web, worker, stop };
}
