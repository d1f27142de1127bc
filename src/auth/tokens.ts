import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';

const ISSUER = 'account-migration-import';

export type TokenKind = 'access' | 'refresh';
export type TokenClaims = {
  sub: string;
  akid: string;
  typ: TokenKind;
  iat: number;
  exp: number;
  iss: string;
};
export type TokenSettings = { secret: string; accessTtlSeconds: number; refreshTtlSeconds: number };
export type Clock = () => Date;

export class TokenError extends Error {
  constructor(readonly reason: 'token_expired' | 'invalid_token') {
    super(reason);
  }
}

export class TokenService {
  private readonly key: Uint8Array;
  /** Tokens whose signature was already checked: a script reuses one token for thousands of requests. */
  private readonly verified = new LRUCache<string, TokenClaims>({ max: 10_000 });
  constructor(
    private readonly settings: TokenSettings,
    private readonly clock: Clock,
  ) {
    this.key = new TextEncoder().encode(settings.secret);
  }

  async issue(
    kind: TokenKind,
    organisationId: string,
    apiKeyId: string,
  ): Promise<{ token: string; claims: TokenClaims }> {
    const iat = Math.floor(this.clock().getTime() / 1000);
    const ttl = kind === 'access' ? this.settings.accessTtlSeconds : this.settings.refreshTtlSeconds;
    const claims: TokenClaims = {
      sub: organisationId,
      akid: apiKeyId,
      typ: kind,
      iat,
      exp: iat + ttl,
      iss: ISSUER,
    };
    const token = await new SignJWT({ akid: apiKeyId, typ: kind })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(organisationId)
      .setIssuer(ISSUER)
      .setIssuedAt(iat)
      .setExpirationTime(claims.exp)
      .sign(this.key);
    return { token, claims };
  }

  async verify(token: string, kind: TokenKind): Promise<TokenClaims> {
    const known = this.verified.get(token);
    if (known) {
      if (known.exp * 1000 <= this.clock().getTime()) throw new TokenError('token_expired');
      if (known.typ !== kind) throw new TokenError('invalid_token');
      return known;
    }
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        algorithms: ['HS256'],
        currentDate: this.clock(),
      });
      if (payload.typ !== kind || typeof payload.sub !== 'string' || typeof payload.akid !== 'string') {
        throw new TokenError('invalid_token');
      }
      const claims = payload as unknown as TokenClaims;
      this.verified.set(token, claims);
      return claims;
    } catch (err) {
      if (err instanceof TokenError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw new TokenError('token_expired');
      throw new TokenError('invalid_token');
    }
  }
}
