import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type LocalServer } from '../support/processes.js';
import { startTestApp, type TestApp } from '../support/app.js';

let redis: LocalServer;
let t: TestApp;

beforeAll(async () => {
  redis = await startRedisServer();
  t = await startTestApp({ env: { TEST_LABEL: 'ready', REDIS_URL: redis.url, REDIS_CLUSTER_NODES: '' } });
});
afterAll(async () => {
  await t.close();
  await redis.stop();
});

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('/readyz', () => {
  it('answers 503 within 2 s when Redis stops, and 200 again once it is back, without a restart', async () => {
    expect((await t.app.inject({ url: '/readyz' })).statusCode).toBe(200);

    await redis.stop();
    const started = Date.now();
    const down = await t.app.inject({ url: '/readyz' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(down.statusCode).toBe(503);
    expect(down.json()).toEqual({
      status: 'unavailable',
      checks: { database: 'ok', redis: 'down', queues: 'down' },
    });
    expect((await t.app.inject({ url: '/healthz' })).statusCode).toBe(200);

    redis = await startRedisServer(redis.port);
    const back = await until(
      () => t.app.inject({ url: '/readyz' }),
      (r) => r.statusCode === 200,
      120_000,
    );
    expect(back.statusCode).toBe(200);
    expect(back.json().checks).toEqual({ database: 'ok', redis: 'ok', queues: 'ok' });
  });
});
