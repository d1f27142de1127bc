import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Models } from '../../src/storage/models/index.js';
import { until } from '../creation/support.js';

export type Received = {
  id: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
};

/**
 * A real HTTP webhook receiver on 127.0.0.1. `answer` decides each request's status from the number of
 * times its `webhook-id` was seen before (0 the first time); 'hang' holds the request open until closed, a
 * promise holds it until it gives the status.
 */
export async function startReceiver(
  answer: (seenBefore: number, id: string) => number | 'hang' | Promise<number> = () => 200,
) {
  const received: Received[] = [];
  const seen = new Map<string, number>();
  const hanging = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      const count = seen.get(id) ?? 0;
      seen.set(id, count + 1);
      received.push({
        id,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        receivedAt: Date.now(),
      });
      const status = answer(count, id);
      if (status === 'hang' || typeof status !== 'number') {
        const end = () => res.destroy();
        hanging.add(end);
        res.on('close', () => hanging.delete(end));
        if (status !== 'hang')
          void status.then((later) => {
            hanging.delete(end);
            res.writeHead(later, { 'content-type': 'text/plain' }).end('ok');
          });
        return;
      }
      res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    /** Distinct webhook ids received. */
    ids: () => new Set(received.map((r) => r.id)),
    async close() {
      for (const end of hanging) end();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Receivers a test file starts as it goes (`start`), all closed at its end (`closeAll`). */
export function receiverPool() {
  const started: Receiver[] = [];
  return {
    async start(answer?: Parameters<typeof startReceiver>[0]) {
      const r = await startReceiver(answer);
      started.push(r);
      return r;
    },
    async closeAll() {
      for (const r of started) await r.close();
    },
  };
}

/**
 * Waits (up to 5 minutes, without failing) until every published event of the supplier's accounts reached the
 * receiver; returns how many were published and a count of those still missing, for the test to report and
 * assert.
 */
export async function awaitDelivered(models: Models, supplier: string, receiver: Receiver) {
  const published = await models.ImportEvent.find({ importSupplier: supplier, type: { $ne: null } })
    .select({ eventId: 1 })
    .lean();
  const undelivered = () => published.filter((e) => !receiver.ids().has(e.eventId)).length;
  await until(async () => undelivered() === 0, `all ${published.length} events delivered`, 300_000).catch(
    () => false,
  );
  return { published: published.length, undelivered };
}
