import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';

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
    try {
      const { payload } = await jwtVerify(token, this.key, {
        issuer: ISSUER,
        algorithms: ['HS256'],
        currentDate: this.clock(),
      });
      if (payload.typ !== kind || typeof payload.sub !== 'string' || typeof payload.akid !== 'string') {
        throw new TokenError('invalid_token');
      }
      return payload as unknown as TokenClaims;
    } catch (err) {
      if (err instanceof TokenError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw new TokenError('token_expired');
      throw new TokenError('invalid_token');
    }
  }
}
