import { answers } from './answers.js';
import { examples } from './examples.js';

// Parts of the OpenAPI document that no zod route schema carries: the token mutation (a GraphQL endpoint
// served by mercurius) and examples of the path parameters.

type Operation = Record<string, unknown> & { parameters?: Array<Record<string, unknown>> };
type Paths = Record<string, Record<string, Operation> | undefined>;
/** Any OpenAPI document: only its paths are touched. */
type Document = { paths?: object };

const graphqlErrors = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      message: { type: 'string' },
      locations: {
        type: 'array',
        description: 'Where in the query the error is.',
        items: {
          type: 'object',
          properties: { line: { type: 'integer' }, column: { type: 'integer' } },
        },
      },
      path: { type: 'array', items: { type: ['string', 'integer'] }, description: 'The field that failed.' },
      extensions: {
        type: 'object',
        properties: {
          errorCode: {
            type: 'string',
            enum: ['INVALID_INPUT', 'INVALID_API_KEY', 'INVALID_REFRESH_TOKEN', 'REFRESH_TOKEN_EXPIRED'],
          },
        },
      },
    },
    required: ['message'],
  },
};

const tokenOperation: Operation = {
  tags: ['authentication'],
  operationId: 'obtainToken',
  summary: 'Obtain a token (GraphQL mutation obtainKrakenToken, alias obtainToken)',
  description:
    'A GraphQL endpoint. Send exactly one of `APIKey` (the organisation key from the operators) or ' +
    '`refreshToken` in `input`. `token` is an access token for 60 minutes (send it as `Authorization: Token ' +
    '<token>`), `refreshToken` lasts 7 days and `refreshExpiresIn` is its expiry as a Unix timestamp in seconds. ' +
    'Refused credentials answer HTTP 200 with `errors[].extensions.errorCode` and `data: null`.',
  security: [],
  requestBody: {
    required: true,
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['query'],
          properties: {
            query: { type: 'string', description: 'The GraphQL document.' },
            variables: {
              type: 'object',
              properties: {
                input: {
                  type: 'object',
                  description: 'ObtainJSONWebTokenInput: exactly one of the two.',
                  properties: { APIKey: { type: 'string' }, refreshToken: { type: 'string' } },
                },
              },
            },
            operationName: { type: 'string' },
          },
        },
        examples: {
          example: { summary: 'Exchange the API key for a token', value: examples.token },
          refresh: {
            summary: 'Obtain a new token with the refresh token',
            value: {
              query: examples.token.query,
              variables: {
                input: {
                  refreshToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0eXAiOiJyZWZyZXNoIn0.c2lnbmF0dXJl',
                },
              },
            },
          },
        },
      },
    },
  },
  responses: {
    200: {
      description: 'The token, or GraphQL errors (refused key or refresh token) with data null.',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              data: {
                type: ['object', 'null'],
                properties: {
                  obtainKrakenToken: {
                    type: 'object',
                    properties: {
                      token: { type: 'string' },
                      payload: {
                        type: 'object',
                        description: 'The access token claims: sub, akid, typ, iat, exp, iss.',
                      },
                      refreshToken: { type: 'string' },
                      refreshExpiresIn: { type: 'integer', description: 'Unix timestamp in seconds.' },
                    },
                  },
                },
              },
              errors: graphqlErrors,
            },
          },
        },
      },
    },
    400: {
      description: 'Not a GraphQL request: malformed JSON, a missing query, or a query with a syntax error.',
      content: {
        'application/json': {
          schema: { type: 'object', properties: { data: { type: 'null' }, errors: graphqlErrors } },
        },
      },
    },
    415: {
      description: 'The body is not sent as application/json.',
      content: {
        'application/json': {
          schema: { type: 'object', properties: { data: { type: 'null' }, errors: graphqlErrors } },
        },
      },
    },
  },
};

export function addTokenMutation(document: Document): void {
  const paths = (document.paths ??= {}) as Paths;
  paths['/v1/graphql/'] = { post: tokenOperation };
}

/** Path parameters get the values of the examples, so every operation can be tried as documented. */
export function addParameterExamples(document: Document): void {
  const values: Record<string, string> = examples.params;
  for (const item of Object.values((document.paths ?? {}) as Paths)) {
    for (const operation of Object.values(item ?? {})) {
      for (const parameter of operation.parameters ?? []) {
        const value = values[parameter.name as string];
        if (parameter.in === 'path' && value !== undefined) parameter.example = value;
      }
    }
  }
}

/**
 * Every answer of `answers` becomes its operation's example for that status, in place of an example generated from
 * the schema. An entry that names no documented answer with a JSON body is a mistake, and throws.
 */
export function addAnswerExamples(document: Document): void {
  const found = new Set<string>();
  for (const item of Object.values((document.paths ?? {}) as Paths)) {
    for (const operation of Object.values(item ?? {})) {
      const id = operation.operationId as string | undefined;
      const responses = operation.responses as
        Record<string, { content?: Record<string, object> }> | undefined;
      for (const [status, value] of Object.entries((id && answers[id]) || {})) {
        const json = responses?.[status]?.content?.['application/json'] as
          Record<string, unknown> | undefined;
        if (!json) throw new Error(`answers.${id}: ${status} is not a documented answer with a JSON body`);
        json.example = value;
        found.add(`${id} ${status}`);
      }
    }
  }
  const stale = Object.entries(answers).flatMap(([id, byStatus]) =>
    Object.keys(byStatus)
      .map((status) => `${id} ${status}`)
      .filter((key) => !found.has(key)),
  );
  if (stale.length > 0) throw new Error(`answers of no documented operation: ${stale.join(', ')}`);
}

/** Paths in the order of their operations' tags (the workflow), keeping the order of routes within a tag. */
export function orderPaths(document: Document, tagOrder: readonly string[]): void {
  const paths = (document.paths ?? {}) as Paths;
  const rank = (item: Record<string, Operation> | undefined): number => {
    const tags = Object.values(item ?? {}).flatMap(
      (operation) => (operation.tags as string[] | undefined) ?? [],
    );
    const ranks = tags.map((tag) => tagOrder.indexOf(tag)).filter((r) => r >= 0);
    return ranks.length > 0 ? Math.min(...ranks) : tagOrder.length;
  };
  const entries = Object.entries(paths).map(([path, item], index) => ({
    path,
    item,
    index,
    rank: rank(item),
  }));
  entries.sort((a, b) => a.rank - b.rank || a.index - b.index);
  document.paths = Object.fromEntries(entries.map(({ path, item }) => [path, item]));
}

/**
 * An answer with an empty body (`z.void()`, e.g. the billing documents' 201) has no media type: the generator
 * gives it an `application/json` entry whose schema is only a description, which would promise a JSON body.
 */
export function dropEmptyBodies(document: Document): void {
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item ?? {})) {
      const responses = (
        operation as { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }
      ).responses;
      for (const response of Object.values(responses ?? {})) {
        const json = response.content?.['application/json'];
        if (json?.schema && Object.keys(json.schema).every((key) => key === 'description'))
          delete response.content;
      }
    }
  }
}
