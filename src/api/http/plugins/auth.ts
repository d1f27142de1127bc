import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { Types } from 'mongoose';
import { TokenError } from '../../../auth/tokens.js';
import { ApiError } from '../errors.js';

export type Principal = { organisationId: Types.ObjectId; apiKeyId: string };

declare module 'fastify' {
  interface FastifyInstance {
    authenticate: (request: FastifyRequest) => Promise<void>;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

// `Token` is the interface's scheme; `Bearer` is what most HTTP clients send by default.
const SCHEMES = new Set(['token', 'bearer']);

/** `Authorization: Token <jwt>`, `Bearer <jwt>` or a bare `<jwt>`. Anything else is "not authenticated". */
function extractToken(header: string | undefined): string | null {
  if (!header) return null;
  const parts = header.trim().split(/\s+/);
  if (parts.length === 1) return parts[0] ?? null;
  if (parts.length === 2 && SCHEMES.has(parts[0]!.toLowerCase())) return parts[1] ?? null;
  return null;
}

export default fp(
  async (app) => {
    app.decorateRequest('principal', null);
    const ttl = app.config.AUTH_CACHE_TTL_MS;
    const liveKeys = ttl > 0 ? new LRUCache<string, boolean>({ max: 10_000, ttl }) : null;
    const isLive = async (apiKeyId: string, organisationId: string): Promise<boolean> => {
      const cacheKey = `${organisationId}/${apiKeyId}`;
      const cached = liveKeys?.get(cacheKey);
      if (cached !== undefined) return cached;
      const key = await app.storage.apiKeys.findById(apiKeyId);
      const live = key !== null && String(key.organisationId) === organisationId && !key.revokedAt;
      liveKeys?.set(cacheKey, live);
      return live;
    };
    app.decorate('authenticate', async (request: FastifyRequest) => {
      const token = extractToken(request.headers.authorization);
      if (!token) throw new ApiError('not_authenticated');
      let claims;
      try {
        claims = await app.tokens.verify(token, 'access');
      } catch (err) {
        if (err instanceof TokenError) throw new ApiError(err.reason);
        throw err;
      }
      // Revoking a key stops its tokens within AUTH_CACHE_TTL_MS (default 1 s) on every API pod.
      if (!(await isLive(claims.akid, claims.sub))) throw new ApiError('invalid_token');
      request.principal = { organisationId: new Types.ObjectId(claims.sub), apiKeyId: claims.akid };
    });
  },
  { name: 'auth', dependencies: ['services'] },
);
