import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendWebhook } from '../../src/use-cases/webhooks/sender.js';

// The signed POST itself, against a real HTTP server: what it makes of the answer's body.
let server: Server;
let port = 0;
const open = new Set<() => void>();

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/refused') return void res.writeHead(500).end('no');
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      if (req.url === '/endless') {
        // A body that never ends, 16 KB at a time.
        const chunk = Buffer.alloc(16 * 1024, 97);
        const timer = setInterval(() => res.write(chunk), 1);
        res.on('close', () => clearInterval(timer));
      } else if (req.url === '/stalled') {
        // The headers, then nothing.
        res.flushHeaders();
        const end = () => res.destroy();
        open.add(end);
        res.on('close', () => open.delete(end));
      } else res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  for (const end of open) end();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const send = (path: string, timeoutMs: number) =>
  sendWebhook(
    { url: new URL(`http://127.0.0.1:${port}${path}`), address: '127.0.0.1', family: 4 },
    { id: 'msg_1', body: '{"id":"msg_1"}', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    timeoutMs,
  );

it('a 2xx is delivered, its body read and dropped', async () => {
  expect(await send('/ok', 5_000)).toEqual({ delivered: true, httpStatus: 200 });
});

it('a 2xx whose body never ends is delivered: the body is cut after 64 KB, not read to the end of the time', async () => {
  expect(await send('/endless', 60_000)).toEqual({ delivered: true, httpStatus: 200 });
});

it('a body that stalls is cut at the end of the delivery time: not delivered', async () => {
  const result = await send('/stalled', 300);
  expect(result.delivered).toBe(false);
  expect(result.error).toMatch(/Abort|Timeout/);
});

it('an answer other than a 2xx is not delivered, with its status', async () => {
  expect(await send('/refused', 5_000)).toEqual({ delivered: false, httpStatus: 500 });
});

it('a connection refused is not delivered, with no status and the error named', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const result = await sendWebhook(
    { url: new URL(`http://127.0.0.1:${closedPort}/x`), address: '127.0.0.1', family: 4 },
    { id: 'msg_2', body: '{}', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
    5_000,
  );
  expect(result).toMatchObject({ delivered: false, httpStatus: null });
  expect(result.error).toBeTruthy();
});
