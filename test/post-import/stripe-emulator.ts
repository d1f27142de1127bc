import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server speaking the two Stripe endpoints the adapter calls, deciding by the id's prefix:
 * `*_ok*` exists, `*_missing*` is 404 resource_missing, `*_flaky*` answers 503 twice then exists,
 * `*_down*` always 503, `*_slow*` exists after `slowMs`, `pm_sepa*` is not a card, `mandate_inactive*` is inactive.
 */
export type StripeEmulator = { url: string; calls: (id: string) => number; close: () => Promise<void> };

export async function startStripeEmulator(slowMs: number): Promise<StripeEmulator> {
  const calls = new Map<string, number>();
  const pending = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const match = /^\/v1\/(payment_methods|mandates)\/([^/?]+)/.exec(req.url ?? '');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_emulated' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || !match)
      return send(404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } });
    const [, resource, id] = match as unknown as [string, string, string];
    const n = (calls.get(id) ?? 0) + 1;
    calls.set(id, n);
    const found = () =>
      resource === 'mandates'
        ? send(200, {
            id,
            object: 'mandate',
            status: id.includes('inactive') ? 'inactive' : 'active',
            payment_method_details: { type: 'sepa_debit' },
          })
        : id.startsWith('pm_sepa')
          ? send(200, { id, object: 'payment_method', type: 'sepa_debit', sepa_debit: { last4: '3000' } })
          : send(200, {
              id,
              object: 'payment_method',
              type: 'card',
              card: {
                brand: 'visa',
                last4: '4242',
                exp_month: 12,
                exp_year: id.includes('expired') ? 2020 : 2099,
              },
            });
    const unavailable = () => send(503, { error: { type: 'api_error', message: 'Service unavailable' } });
    if (id.includes('_missing')) {
      return send(404, {
        error: {
          type: 'invalid_request_error',
          code: 'resource_missing',
          message: `No such ${resource}: '${id}'`,
          param: 'id',
        },
      });
    }
    if (id.includes('_flaky')) return n <= 2 ? unavailable() : found();
    if (id.includes('_down')) return unavailable();
    if (id.includes('_slow')) {
      const timer = setTimeout(() => {
        pending.delete(timer);
        found();
      }, slowMs);
      pending.add(timer);
      return;
    }
    return found();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: (id) => calls.get(id) ?? 0,
    close: async () => {
      for (const t of pending) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
