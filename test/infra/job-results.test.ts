import { createServer, connect, type Server, type Socket } from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { JobResults, publishResult, resultKey } from '../../src/infra/job-results.js';
import { producerConnection } from '../../src/infra/redis.js';
import { redisKeys } from '../../src/infra/redis-keys.js';
import { until } from '../creation/support.js';
import { testConfig } from '../support/env.js';
import { startRedisServer } from '../support/processes.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A TCP hop to a real Redis whose connections can be cut (a Redis restart, as its clients see it), and which
 * can hold a new connection's replies from its ready check (`INFO`) on: the moment between a reconnecting
 * client's check and its answer, stretched as long as the test likes.
 */
async function redisHop(target: URL) {
  const sockets = new Set<Socket>();
  let armed: (() => void) | null = null;
  const holds: Array<() => void> = [];
  // Half-open: a client's end does not end the hop's side towards it, so held answers can still follow it.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    let holding = false;
    let ended = false;
    const held: Buffer[] = [];
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (armed && /\binfo\r\n/i.test(chunk.toString('latin1'))) {
        holding = true;
        holds.push(() => {
          holding = false;
          for (const c of held.splice(0)) client.write(c);
          if (ended) client.end();
        });
        armed();
        armed = null;
      }
    });
    client.on('end', () => upstream.end());
    upstream.on('data', (chunk: Buffer) => (holding ? held.push(chunk) : client.write(chunk)));
    upstream.on('end', () => (holding ? (ended = true) : client.end()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    /** Drops every connection through the hop (it keeps listening: clients reconnect through it). */
    cut: () => {
      for (const s of sockets) s.destroy();
    },
    /** Resolves once a connection has sent its ready check, whose answer is then held until `release`. */
    holdNextReadyCheck: () => new Promise<void>((resolve) => (armed = resolve)),
    release: () => {
      for (const h of holds.splice(0)) h();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}

it('subscribes again after a reconnect, and closing it while it reconnects leaves no unhandled rejection', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  cleanups.push(() => process.off('unhandledRejection', onUnhandled));
  const redis = await startRedisServer();
  cleanups.push(() => redis.stop());
  const hop = await redisHop(new URL(redis.url));
  cleanups.push(() => hop.close());
  const config = testConfig({ TEST_LABEL: 'jobresults', REDIS_URL: hop.url, REDIS_CLUSTER_NODES: '' });
  const keys = redisKeys(config.QUEUE_PREFIX);
  const results = new JobResults(config, keys, pino({ level: 'silent' }));
  cleanups.push(() => results.close());
  await results.ready;
  const publisher = producerConnection({ REDIS_URL: redis.url, REDIS_CLUSTER_NODES: [] });
  cleanups.push(() => publisher.disconnect());

  // A restart: the subscription is renewed on the new connection, and results reach a waiting request again.
  hop.cut();
  const received = new Promise((resolve) => results.once(resultKey('q', 'after-cut'), resolve));
  await until(
    async () => (await publisher.publish(keys.jobResults, '{}').catch(() => 0)) > 0,
    'the subscriber subscribed again',
    30_000,
  );
  publishResult(publisher, keys, 'q', 'after-cut', { ok: true });
  expect(await received).toEqual({ ok: true });

  // Another restart, and the process shuts down while the subscriber's ready check is unanswered: the check's
  // answer comes after the close, and nothing is sent on a connection being closed.
  const checking = hop.holdNextReadyCheck();
  hop.cut();
  await checking;
  const closed = results.close();
  hop.release();
  await closed;
  // A rejection nobody handles is reported once the microtasks of its turn have run.
  await turn();
  await turn();
  expect(unhandled).toEqual([]);
});
