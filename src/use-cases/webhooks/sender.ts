import { Webhook } from 'standardwebhooks';
import { LRUCache } from 'lru-cache';
import { Agent, type Dispatcher } from 'undici';
import type { CheckedUrl } from './url-guard.js';

/** How much of a response is read (then dropped): enough to finish the exchange, never stored. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export type SendResult = { delivered: boolean; httpStatus: number | null; error?: string };

/**
 * Sends one signed webhook. Standard Webhooks signing (the `standardwebhooks` library): `webhook-id` (the
 * event's id, the same on every retry and replay), `webhook-timestamp` (this attempt's time), and
 * `webhook-signature` over `<id>.<timestamp>.<body>`. The connection goes to the address the URL guard
 * checked, on a connection kept for the next delivery (`agentFor`); redirects are not followed (undici's
 * dispatchers never follow them); the whole exchange is bounded by `timeoutMs`. Any 2xx is delivered.
 */
export function sendWebhook(
  target: CheckedUrl,
  message: { id: string; body: string; secret: string },
  timeoutMs: number,
  now: Date = new Date(),
): Promise<SendResult> {
  const signature = new Webhook(message.secret).sign(message.id, now, message.body);
  return new Promise((resolve) => {
    // The exchange through the dispatcher's own interface: undici's `request`, with its body stream and abort
    // signal, cost the sender 86 µs of CPU a delivery against 49 (the signature's 12 included; measured alone,
    // 20,000 sends to a local receiver), for a body that is only counted and dropped.
    let controller: Dispatcher.DispatchController | null = null;
    let status: number | null = null;
    let read = 0;
    let settled = false;
    const settle = (result: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    // The whole exchange, the wait for a connection included: a request still queued when the time is up is
    // dropped as it starts.
    const timer = setTimeout(() => {
      settle({ delivered: false, httpStatus: null, error: 'TimeoutError' });
      controller?.abort(new Error('webhook delivery timed out'));
    }, timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(started) {
        controller = started;
        if (settled) started.abort(new Error('webhook delivery timed out'));
      },
      onResponseStart(_c, statusCode) {
        status = statusCode;
      },
      // Counted and dropped (the connection is then kept for the next delivery), at most MAX_RESPONSE_BYTES: a
      // longer body is cut, and the answer stands on its status.
      onResponseData(c, chunk) {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) {
          settle(outcome(status!));
          c.abort(new Error('webhook response too long'));
        }
      },
      onResponseEnd() {
        settle(outcome(status!));
      },
      onResponseError(_c, err) {
        settle({ delivered: false, httpStatus: null, error: err.name });
      },
    };
    try {
      agentFor(target, timeoutMs).dispatch(
        {
          origin: target.url.origin,
          path: `${target.url.pathname}${target.url.search}`,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'account-migration-import-webhooks',
            'webhook-id': message.id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signature,
          },
          body: message.body,
        },
        handler,
      );
    } catch (err) {
      settle({ delivered: false, httpStatus: null, error: (err as Error).name });
    }
  });
}

const outcome = (status: number): SendResult => ({
  delivered: status >= 200 && status < 300,
  httpStatus: status,
});

/**
 * How long an idle connection to an endpoint is kept for the next delivery: short, below the idle timeout of
 * nearly any server or load balancer, so a delivery seldom meets a connection its server has just closed
 * (a server's own `Keep-Alive: timeout` is honoured when shorter).
 */
const KEEP_ALIVE_MS = 2_000;

/**
 * The connections to endpoints, kept per origin and checked address: a connection is only ever to the address
 * its URL was checked to (the lookup is pinned to it), so a check that gives another address gets another
 * agent. Reused, a connection saves each delivery the connect and the teardown. Module-level: a cache of
 * connections any sender in the process may share, which nothing configures and no caller needs to see.
 */
const agents = new LRUCache<string, Agent>({
  max: 256,
  dispose: (agent) => void agent.close().catch(() => undefined), // silent-ok: no delivery left on it
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
