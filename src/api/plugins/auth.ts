import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { Types } from 'mongoose';
import { TokenError } from '../../auth/tokens.js';
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

/** `Authorization: Token <jwt>` or a bare `<jwt>`. Anything else is "not authenticated". */
function extractToken(header: string | undefined): string | null {
  if (!header) return null;
  const parts = header.trim().split(/\s+/);
  if (parts.length === 1) return parts[0] ?? null;
  if (parts.length === 2 && parts[0]?.toLowerCase() === 'token') return parts[1] ?? null;
  return null;
}

export default fp(
  async (app) => {
    app.decorateRequest('principal', null);
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
      // Revoking a key must stop its tokens at once, so the key is checked on every request.
      const live = Types.ObjectId.isValid(claims.akid)
        ? await app.db.models.ApiKey.exists({ _id: claims.akid, organisationId: claims.sub, revokedAt: null })
        : null;
      if (!live) throw new ApiError('invalid_token');
      request.principal = { organisationId: new Types.ObjectId(claims.sub), apiKeyId: claims.akid };
    });
  },
  { name: 'auth', dependencies: ['services'] },
);
