import type { FastifyInstance } from 'fastify';
import mercurius, { type MercuriusContext } from 'mercurius';
import { hashApiKey } from '../../../auth/api-keys.js';
import { TokenError } from '../../../auth/tokens.js';
import { isDatabaseUnavailable } from '../../../infra/mongo.js';
import { errorCatalogue, SERVICE_UNAVAILABLE_RETRY_AFTER } from '../errors.js';

const { ErrorWithProps } = mercurius;

const schema = /* GraphQL */ `
  scalar GenericScalar

  input ObtainJSONWebTokenInput {
    "The organisation API key supplied by the platform operators."
    APIKey: String
    "A refresh token from an earlier obtainKrakenToken call."
    refreshToken: String
  }

  type ObtainJSONWebTokenPayload {
    token: String!
    payload: GenericScalar!
    refreshToken: String!
    "When the refresh token expires, as a Unix timestamp in seconds."
    refreshExpiresIn: Int!
  }

  type Query {
    "Liveness of the GraphQL endpoint."
    ping: String!
  }

  type Mutation {
    obtainKrakenToken(input: ObtainJSONWebTokenInput!): ObtainJSONWebTokenPayload!
    obtainToken(input: ObtainJSONWebTokenInput!): ObtainJSONWebTokenPayload!
  }
`;

type TokenInput = { APIKey?: string | null; refreshToken?: string | null };

function fail(message: string, errorCode: string): never {
  throw new ErrorWithProps(message, { errorCode }, 200);
}

type Resolver = (root: unknown, args: { input: TokenInput }, context: MercuriusContext) => Promise<unknown>;

/** While the database is down the token mutation answers HTTP 503 with Retry-After, as the REST routes do. */
function available(resolver: Resolver): Resolver {
  return async (root, args, context) => {
    try {
      return await resolver(root, args, context);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      context.reply.request.log.warn({ err }, 'database unavailable');
      void context.reply.header('retry-after', SERVICE_UNAVAILABLE_RETRY_AFTER);
      throw new ErrorWithProps(
        errorCatalogue.service_unavailable.detail,
        { errorCode: 'SERVICE_UNAVAILABLE' },
        503,
      );
    }
  };
}

/** The token endpoint: exchanges an API key or a refresh token for a 60-minute JWT. */
export default async function graphqlRoutes(app: FastifyInstance): Promise<void> {
  const obtain = async (_root: unknown, { input }: { input: TokenInput }) => {
    const hasKey = typeof input.APIKey === 'string' && input.APIKey.length > 0;
    const hasRefresh = typeof input.refreshToken === 'string' && input.refreshToken.length > 0;
    if (hasKey === hasRefresh) fail('Provide exactly one of APIKey or refreshToken.', 'INVALID_INPUT');

    let organisationId: string;
    let apiKeyId: string;
    if (hasKey) {
      const key = await app.storage.apiKeys.findByHash(
        hashApiKey(input.APIKey as string, app.config.API_KEY_HASH_SECRET),
      );
      if (!key || key.revokedAt) fail('Invalid API key.', 'INVALID_API_KEY');
      organisationId = String(key.organisationId);
      apiKeyId = key._id.toHexString();
    } else {
      try {
        const claims = await app.tokens.verify(input.refreshToken as string, 'refresh');
        organisationId = claims.sub;
        apiKeyId = claims.akid;
      } catch (err) {
        if (err instanceof TokenError && err.reason === 'token_expired')
          fail('Refresh token has expired.', 'REFRESH_TOKEN_EXPIRED');
        fail('Invalid refresh token.', 'INVALID_REFRESH_TOKEN');
      }
      const key = await app.storage.apiKeys.findById(apiKeyId);
      if (!key || key.revokedAt) fail('Invalid refresh token.', 'INVALID_REFRESH_TOKEN');
    }
    const access = await app.tokens.issue('access', organisationId, apiKeyId);
    const refresh = await app.tokens.issue('refresh', organisationId, apiKeyId);
    return {
      token: access.token,
      payload: access.claims,
      refreshToken: refresh.token,
      refreshExpiresIn: refresh.claims.exp,
    };
  };

  // Mercurius describes its GET querystring in JSON Schema, which the app's (zod) validator cannot read; its
  // handler parses the parameters itself and answers a missing or bad query as a GraphQL error.
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  await app.register(mercurius, {
    schema,
    path: '/v1/graphql/',
    graphiql: false,
    resolvers: {
      Query: { ping: () => 'pong' },
      Mutation: { obtainKrakenToken: available(obtain), obtainToken: available(obtain) },
    },
  });
}
