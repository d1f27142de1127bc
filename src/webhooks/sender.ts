import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import type { CheckedUrl } from './url-guard.js';

/** How much of a response is read (then dropped): enough to finish the exchange, never stored. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export type SendResult = { delivered: boolean; httpStatus: number | null; error?: string };

/**
 * Sends one signed webhook. Standard Webhooks signing (the `standardwebhooks` library): `webhook-id` (the
 * event's id, the same on every retry and replay), `webhook-timestamp` (this attempt's time), and
 * `webhook-signature` over `<id>.<timestamp>.<body>`. The connection goes to the address the URL guard
 * checked; redirects are not followed (undici's `request` never follows them); the whole exchange is bounded
 * by `timeoutMs`. Any 2xx is delivered.
 */
export async function sendWebhook(
  target: CheckedUrl,
  message: { id: string; body: string; secret: string },
  timeoutMs: number,
  now: Date = new Date(),
): Promise<SendResult> {
  const signature = new Webhook(message.secret).sign(message.id, now, message.body);
  const pinned = (
    _host: string,
    options: { all?: boolean },
    callback: (...args: unknown[]) => void,
  ): void => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const agent = new Agent({ connect: { lookup: pinned as never, timeout: timeoutMs } });
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
    let read = 0;
    for await (const chunk of response.body) {
      read += (chunk as Buffer).length;
      if (read >= MAX_RESPONSE_BYTES) {
        response.body.destroy();
        break;
      }
    }
    const status = response.statusCode;
    return { delivered: status >= 200 && status < 300, httpStatus: status };
  } catch (err) {
    return { delivered: false, httpStatus: null, error: (err as Error).name };
  } finally {
    void agent.close().catch(() => undefined);
  }
}
