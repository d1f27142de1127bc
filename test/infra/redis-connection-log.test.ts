import { createServer, connect, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, expect, inject, it } from 'vitest';
import { logConnectionErrors, producerConnection } from '../../src/infra/redis.js';
import { until } from '../creation/support.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve) =>
    server.listen(port, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );
}

/** A TCP hop to the tests' real Redis that can be cut and restored, standing for a network outage. */
function redisHop() {
  const target = new URL(inject('redisUrl'));
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    listen: (port: number) => listen(server, port),
    cut: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

it('logs a Redis connection failure once per outage and its return, never the URL', async () => {
  const lines: Array<{ level: number; msg: string; connection?: string; err?: string }> = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  // A free port, with nothing listening yet: the connection fails and keeps retrying.
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((r) => probe.close(r));
  const connection = producerConnection({
    REDIS_URL: `redis://:s3cret-pass@127.0.0.1:${port}`,
    REDIS_CLUSTER_NODES: [],
  });
  cleanups.push(() => connection.disconnect());
  let errors = 0;
  connection.on('error', () => errors++);
  logConnectionErrors(connection, log, 'probe');

  await until(async () => errors >= 3, 'three connection errors');
  const warnings = () => lines.filter((l) => l.msg === 'redis connection error');
  expect(warnings()).toHaveLength(1);
  expect(warnings()[0]).toMatchObject({ level: 40, connection: 'probe' });
  expect(warnings()[0]!.err).toContain('ECONNREFUSED');

  // Redis reachable again: one line saying so; then a second outage is logged again, once.
  const hop = redisHop();
  await hop.listen(port);
  await until(async () => lines.some((l) => l.msg === 'redis connection restored'), 'the reconnection');
  await hop.cut();
  const before = errors;
  await until(async () => errors >= before + 3, 'three more connection errors');
  expect(warnings()).toHaveLength(2);
  expect(lines.filter((l) => l.msg === 'redis connection restored')).toHaveLength(1);
  expect(JSON.stringify(lines)).not.toContain('s3cret');
});
