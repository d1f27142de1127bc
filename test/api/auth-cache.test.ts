import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, graphqlToken, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'authcache', AUTH_CACHE_TTL_MS: '300' } });
});
afterAll(async () => t.close());

async function pollStatus(fn: () => Promise<number>, want: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let status = await fn();
  while (status !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 25));
    status = await fn();
  }
  return status;
}

describe('with the liveness cache on', () => {
  it("stops a revoked key's tokens within the cache TTL, and a paused supplier is refused within it", async () => {
    const tenant = await createTenant(t, 'Cache Org', 'CACHE');
    const key = await t.ops.createApiKey('Cache Org');
    const token = (await graphqlToken(t.app, { APIKey: key.api_key })).body.data!.obtainKrakenToken.token;
    const list = () =>
      t.app
        .inject({
          url: '/v1/data-import/all-account-import-processes/CACHE/',
          headers: { authorization: `Token ${token}` },
        })
        .then((r) => r.statusCode);
    expect(await list()).toBe(200);
    await t.ops.revokeApiKey(key.prefix);
    expect(await pollStatus(list, 401, 30_000)).toBe(401);
    // The organisation's other key is unaffected.
    const other = await t.app.inject({
      url: '/v1/data-import/all-account-import-processes/CACHE/',
      headers: tenant.headers,
    });
    expect(other.statusCode).toBe(200);
  });
});
