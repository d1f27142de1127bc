import { createServer, Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../src/config.js';
import type { Storage } from '../src/storage/index.js';
import { WebhookOperations } from '../src/use-cases/admin/webhooks.js';
import { freePort, waitForPort } from '../test/support/processes.js';
import { childEnv, startProcess } from '../test/creation/processes.js';

/**
 * What the v2 benchmarks (`scheduled`, `endpoint-share`) share: a webhook receiver standing for a customer's
 * endpoints, and one `web` and one `worker` process scheduling realistic accounts over real HTTP.
 */

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A real HTTP receiver in the bench's process, verifying every signature with the library's verifier (built
 * once per endpoint from its secret). Records the first arrival of each event at the first endpoint (`arrivals`,
 * for latency) and every endpoint's arrivals (`received`).
 */
export async function startReceiver() {
  const arrivals = new Map<string, number>();
  const received = new Set<string>();
  const verifiers = new Map<string, Webhook>();
  const counts = { invalidSignatures: 0, endpoints: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString();
      const id = String(req.headers['webhook-id']);
      try {
        const verifier = verifiers.get(req.url ?? '');
        if (!verifier) throw new Error(`no endpoint at ${req.url}`);
        verifier.verify(body, {
          'webhook-id': id,
          'webhook-timestamp': String(req.headers['webhook-timestamp']),
          'webhook-signature': String(req.headers['webhook-signature']),
        });
        if (req.url === '/hooks/0' && !arrivals.has(id)) arrivals.set(id, at);
        received.add(`${req.url} ${id}`);
      } catch {
        counts.invalidSignatures++;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    arrivals,
    received,
    counts,
    /**
     * Subscribes a new endpoint of the organisation to `complete-v1`, as `webhook add` would. Resolves with the
     * time it is active from (its events are those from `active_from` on, WEBHOOK_ACTIVATION_DELAY_MS after it
     * was added): see `untilActive`.
     */
    async subscribe(storage: Pick<Storage, 'webhooks'>, config: Config, org: string): Promise<number> {
      const path = `/hooks/${counts.endpoints++}`;
      const endpoint = await new WebhookOperations(storage, config).add(org, `${url}${path}`, [
        'data_import.import_process.complete-v1',
      ]);
      verifiers.set(path, new Webhook(endpoint.secret));
      return Date.parse(endpoint.active_from);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Waits until endpoints subscribed before a migration (`Receiver.subscribe`) are all active. */
export async function untilActive(activeFrom: readonly number[]): Promise<void> {
  const activeIn = Math.max(0, ...activeFrom) - Date.now();
  if (activeIn > 0) await new Promise((r) => setTimeout(r, activeIn));
}

/**
 * One `web` and one `worker` process as the Procfile runs them (BENCH_CHILD_NODE_OPTIONS, e.g. `--cpu-prof
 * --cpu-prof-dir=/tmp/prof`, profiles both), and a keep-alive client scheduling accounts on v2.
 */
export async function startServiceProcesses(config: Config, concurrency: number) {
  const port = await freePort();
  const base = childEnv(config, {
    WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(process.env.BENCH_CHILD_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_CHILD_NODE_OPTIONS } : {}),
  });
  const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
  const worker = startProcess('worker', base);
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const stop = async () => {
    agent.destroy();
    await Promise.all([web.stop(), worker.stop()]);
  };
  try {
    await waitForPort(port);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    pids: { web: web.proc.pid, worker: worker.proc.pid },
    /** Schedules one account (window: now) with the tenant's `headers`; resolves with the HTTP status. */
    schedule(headers: Record<string, string>, payload: object, teamName: string): Promise<number> {
      return new Promise((resolve, reject) => {
        const body = JSON.stringify({
          payload: { ...payload, operations_team_name: teamName },
          task_params: { is_dry_run: false },
        });
        const req = request(
          `http://127.0.0.1:${port}/v2/data-import/accounts/`,
          { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    },
    stop,
  };
}
