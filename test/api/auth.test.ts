import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, graphqlToken, startTestApp, type TestApp } from '../support/app.js';

let now = new Date('2026-11-22T10:00:00Z');
const clock = () => now;
let t: TestApp;
let apiKey: string;

beforeAll(async () => {
  t = await startTestApp({ clock, env: { TEST_LABEL: 'auth' } });
  apiKey = (await createTenant(t, 'Acme Energy', 'ACME')).apiKey;
});
afterAll(async () => t.close());

const protectedUrl = '/v1/data-import/all-account-import-processes/ACME/';
const get = (authorization?: string) =>
  t.app.inject({ method: 'GET', url: protectedUrl, headers: authorization ? { authorization } : {} });

describe('token flow', () => {
  it('exchanges a valid API key for a token that works on a protected route', async () => {
    const { status, body } = await graphqlToken(t.app, { APIKey: apiKey });
    expect(status).toBe(200);
    const out = body.data!.obtainKrakenToken;
    expect(out.token.split('.')).toHaveLength(3);
    expect(out.payload).toMatchObject({ typ: 'access', exp: Math.floor(now.getTime() / 1000) + 3600 });
    expect(out.refreshExpiresIn).toBe(Math.floor(now.getTime() / 1000) + 7 * 24 * 3600);
    expect((await get(`Token ${out.token}`)).statusCode).toBe(200);
    expect((await get(out.token)).statusCode).toBe(200);
  });

  it('accepts the Bearer scheme like Token, in any case', async () => {
    const token = (await graphqlToken(t.app, { APIKey: apiKey })).body.data!.obtainKrakenToken.token;
    expect((await get(`Bearer ${token}`)).statusCode).toBe(200);
    expect((await get(`bearer  ${token}`)).statusCode).toBe(200);
    expect((await get(`Basic ${token}`)).json().code).toBe('not_authenticated');
    expect((await get(`Bearer ${token}x`)).json().code).toBe('invalid_token');
  });

  it('serves the obtainToken alias too', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/graphql',
      payload: { query: `mutation { obtainToken(input: {APIKey: "${apiKey}"}) { token } }` },
    });
    expect(res.json().data.obtainToken.token).toEqual(expect.any(String));
  });

  it('refuses a wrong key with a GraphQL error code and no token', async () => {
    const { status, body } = await graphqlToken(t.app, { APIKey: 'amk_wrong' });
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors?.[0]?.extensions?.errorCode).toBe('INVALID_API_KEY');
  });

  it('needs exactly one of APIKey and refreshToken', async () => {
    const both = await graphqlToken(t.app, { APIKey: apiKey, refreshToken: 'x' });
    expect(both.body.errors?.[0]?.extensions?.errorCode).toBe('INVALID_INPUT');
    const none = await graphqlToken(t.app, {});
    expect(none.body.errors?.[0]?.extensions?.errorCode).toBe('INVALID_INPUT');
  });

  it('answers 401 with the documented codes for missing, malformed, tampered and expired tokens', async () => {
    const { body } = await graphqlToken(t.app, { APIKey: apiKey });
    const token = body.data!.obtainKrakenToken.token;
    const missing = await get();
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toMatchInlineSnapshot(`
      {
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided or are malformed.",
      }
    `);
    expect((await get('Bearer a b')).json().code).toBe('not_authenticated');
    const [h, p, s] = token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ sub: '000000000000000000000000', akid: 'x', typ: 'access' })).toString('base64url')}.${s}`;
    expect(p).not.toBe(tampered.split('.')[1]);
    const forged = await get(`Token ${tampered}`);
    expect(forged.statusCode).toBe(401);
    expect(forged.json().code).toBe('invalid_token');
    expect((await get('Token not-a-jwt')).json().code).toBe('invalid_token');

    now = new Date(now.getTime() + 3601 * 1000);
    try {
      const expired = await get(`Token ${token}`);
      expect(expired.statusCode).toBe(401);
      expect(expired.json()).toEqual({ detail: 'The token has expired.', code: 'token_expired' });
    } finally {
      now = new Date(now.getTime() - 3601 * 1000);
    }
  });

  it('mints a new token from a refresh token, and refuses an expired or access token as refresh', async () => {
    const first = (await graphqlToken(t.app, { APIKey: apiKey })).body.data!.obtainKrakenToken;
    const refreshed = await graphqlToken(t.app, { refreshToken: first.refreshToken });
    const token = refreshed.body.data!.obtainKrakenToken.token;
    expect((await get(`Token ${token}`)).statusCode).toBe(200);

    const wrongKind = await graphqlToken(t.app, { refreshToken: first.token });
    expect(wrongKind.body.errors?.[0]?.extensions?.errorCode).toBe('INVALID_REFRESH_TOKEN');

    now = new Date(now.getTime() + 8 * 24 * 3600 * 1000);
    try {
      const late = await graphqlToken(t.app, { refreshToken: first.refreshToken });
      expect(late.body.errors?.[0]?.extensions?.errorCode).toBe('REFRESH_TOKEN_EXPIRED');
    } finally {
      now = new Date(now.getTime() - 8 * 24 * 3600 * 1000);
    }
  });

  it('stops every token minted from a revoked key, and the key itself', async () => {
    const key = await t.ops.createApiKey('Acme Energy');
    const minted = (await graphqlToken(t.app, { APIKey: key.api_key })).body.data!.obtainKrakenToken;
    expect((await get(`Token ${minted.token}`)).statusCode).toBe(200);
    await t.ops.revokeApiKey(key.prefix);
    const after = await get(`Token ${minted.token}`);
    expect(after.statusCode).toBe(401);
    expect(after.json().code).toBe('invalid_token');
    expect((await graphqlToken(t.app, { APIKey: key.api_key })).body.errors?.[0]?.extensions?.errorCode).toBe(
      'INVALID_API_KEY',
    );
    expect(
      (await graphqlToken(t.app, { refreshToken: minted.refreshToken })).body.errors?.[0]?.extensions
        ?.errorCode,
    ).toBe('INVALID_REFRESH_TOKEN');
  });

  it('stores only a keyed hash of each API key', async () => {
    const stored = await t.app.db.models.ApiKey.find().lean();
    expect(stored.length).toBeGreaterThan(0);
    for (const doc of stored) {
      expect(JSON.stringify(doc)).not.toContain(apiKey);
      expect(doc.hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});
