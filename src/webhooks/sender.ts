import { Webhook } from 'standardwebhooks';
import { LRUCache } from 'lru-cache';
import { Agent, request } from 'undici';
import type { CheckedUrl } from './url-guard.js';

/** How much of a response is read (then dropped): enough to finish the exchange, never stored. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export type SendResult = { delivered: boolean; httpStatus: number | null; error?: string };

/**
 * Sends one signed webhook. Standard Webhooks signing (the `standardwebhooks` library): `webhook-id` (the
 * event's id, the same on every retry and replay), `webhook-timestamp` (this attempt's time), and
 * `webhook-signature` over `<id>.<timestamp>.<body>`. The connection goes to the address the URL guard
 * checked, on a connection kept for the next delivery (`agentFor`); redirects are not followed (undici's
 * `request` never follows them); the whole exchange is bounded by `timeoutMs`. Any 2xx is delivered.
 */
export async function sendWebhook(
  target: CheckedUrl,
  message: { id: string; body: string; secret: string },
  timeoutMs: number,
  now: Date = new Date(),
): Promise<SendResult> {
  const signature = new Webhook(message.secret).sign(message.id, now, message.body);
  const agent = agentFor(target, timeoutMs);
  const abort = AbortSignal.timeout(timeoutMs);
  try {
    const response = await request(target.url, {
      method: 'POST',
      dispatcher: agent,
      signal: abort,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'account-migration-import-webhooks',
        'webhook-id': message.id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body: message.body,
    });
    // Read and dropped (the connection is then kept for the next delivery), at most MAX_RESPONSE_BYTES: a longer
    // body is cut. Within the exchange's time all the same.
    await response.body.dump({ limit: MAX_RESPONSE_BYTES, signal: abort });
    const status = response.statusCode;
    return { delivered: status >= 200 && status < 300, httpStatus: status };
  } catch (err) {
    return { delivered: false, httpStatus: null, error: (err as Error).name };
  }
}

/**
 * How long an idle connection to an endpoint is kept for the next delivery: short, below the idle timeout of
 * nearly any server or load balancer, so a delivery seldom meets a connection its server has just closed
 * (a server's own `Keep-Alive: timeout` is honoured when shorter).
 */
const KEEP_ALIVE_MS = 2_000;

/**
 * The connections to endpoints, kept per origin and checked address: a connection is only ever to the address
 * its URL was checked to (the lookup is pinned to it), so a check that gives another address gets another
 * agent. Reused, a connection saves each delivery the connect and the teardown.
 */
const agents = new LRUCache<string, Agent>({
  max: 256,
  dispose: (agent) => void agent.close().catch(() => undefined),
});

function agentFor(target: CheckedUrl, connectTimeoutMs: number): Agent {
  const key = `${target.url.origin}|${target.address}|${target.family}`;
  let agent = agents.get(key);
  if (!agent) {
    const pinned = (
      _host: string,
      options: { all?: boolean },
      callback: (...args: unknown[]) => void,
    ): void => {
      if (options.all) callback(null, [{ address: target.address, family: target.family }]);
      else callback(null, target.address, target.family);
    };
    agent = new Agent({
      connect: { lookup: pinned as never, timeout: connectTimeoutMs },
      keepAliveTimeout: KEEP_ALIVE_MS,
      keepAliveMaxTimeout: KEEP_ALIVE_MS,
    });
    agents.set(key, agent);
  }
  return agent;
}
