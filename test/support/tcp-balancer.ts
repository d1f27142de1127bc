import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP load balancer in front of the web processes, as a deployment has one: each connection goes to the next
 * backend in turn, and to the one after when a backend refuses it (a dead process is passed over). It never
 * retries a connection that was accepted and then broke: the client sees that, as it would.
 */
export async function startTcpBalancer(backends: number[]) {
  let next = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.pause();
    const tryBackend = (left: number) => {
      if (left === 0 || client.destroyed) return void client.destroy();
      const port = backends[next++ % backends.length]!;
      const upstream = connect(port, '127.0.0.1');
      let connected = false;
      upstream.once('error', () => {
        if (!connected) tryBackend(left - 1);
      });
      upstream.once('connect', () => {
        connected = true;
        sockets.add(upstream);
        upstream.once('close', () => sockets.delete(upstream));
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        upstream.once('close', () => client.destroy());
        client.once('close', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    tryBackend(backends.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
