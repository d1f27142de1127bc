import type { FastifyError, FastifyInstance } from 'fastify';
import Router from 'find-my-way';
import { failedCollection, isDatabaseTimeout, isDatabaseUnavailable } from '../../infra/mongo.js';
import { isRedisUnavailable } from '../../infra/redis.js';
import { JournalContention } from '../../storage/journal/ledger-journal.js';
import { ApiError, SERVICE_UNAVAILABLE_RETRY_AFTER } from './errors.js';

type ValidationIssue = { instancePath?: string; message?: string; params?: Record<string, unknown> };

function fieldPath(instancePath: string | undefined, context: string): string {
  const path = (instancePath ?? '').replace(/^\//, '').replaceAll('/', '.');
  return path || context;
}

/** Maps Fastify's own errors (parsing, limits, querystring validation) onto the documented codes. */
function fromFastifyError(err: FastifyError): ApiError | null {
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('payload_too_large');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('parse_error');
    case 'FST_ERR_VALIDATION': {
      const issues = (err.validation ?? []) as ValidationIssue[];
      return new ApiError('request_failed_validation', {
        errors: issues.map((i) => ({
          detail: i.message ?? 'Invalid value.',
          // A rule's own code (a zod refinement's `params.code`), e.g. invalid_character in a path parameter.
          code:
            (i.params?.params as { code?: string } | undefined)?.code === 'invalid_character'
              ? 'invalid_character'
              : 'invalid',
          attr: fieldPath(i.instancePath, err.validationContext ?? 'request'),
        })),
      });
    }
  }
  // The JSON parser throws a plain SyntaxError (with statusCode 400) for bad JSON and prototype poisoning.
  if (err instanceof SyntaxError || (err.statusCode === 400 && err.name === 'SyntaxError'))
    return new ApiError('parse_error');
  if (err.statusCode === 415) return new ApiError('unsupported_media_type');
  if (err.statusCode === 413) return new ApiError('payload_too_large');
  return null;
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isDatabaseUnavailable(error)) {
      // Not a fault of ours or the client's: the retry after the outage succeeds (every write is idempotent).
      // A command past MONGO_COMMAND_TIMEOUT_MS is one too (a hung server), said apart, with its collection.
      request.log.warn(
        { err: error, collection: failedCollection(error) },
        isDatabaseTimeout(error) ? 'database command timed out' : 'database unavailable',
      );
      return reply
        .code(503)
        .header('retry-after', SERVICE_UNAVAILABLE_RETRY_AFTER)
        .send(new ApiError('service_unavailable').body());
    }
    // Redis down, or a Redis Cluster failing over (a command to a slot whose master died): retryable.
    if (isRedisUnavailable(error)) {
      request.log.warn({ err: error }, 'redis unavailable');
      return reply
        .code(503)
        .header('retry-after', SERVICE_UNAVAILABLE_RETRY_AFTER)
        .send(new ApiError('service_unavailable').body());
    }
    // An account's journal kept changing under its writer (many concurrent imports onto one account).
    if (error instanceof JournalContention) {
      request.log.warn({ err: error }, 'ledger journal contention');
      return reply
        .code(503)
        .header('retry-after', '1')
        .send(new ApiError('service_unavailable', { detail: 'The account is busy. Retry shortly.' }).body());
    }
    const apiError = error instanceof ApiError ? error : fromFastifyError(error);
    if (apiError) {
      if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
      for (const [name, value] of Object.entries(apiError.options.headers ?? {})) reply.header(name, value);
      return reply.code(apiError.statusCode).send(apiError.body());
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.code(500).send({ detail: 'Internal error', code: 'internal_error', request_id: request.id });
  });

  const allowed = allowedMethods(app);
  app.setNotFoundHandler((request, reply) => {
    const allow = allowed(request.method, request.url);
    const err = allow.length > 0 ? new ApiError('method_not_allowed') : new ApiError('not_found');
    if (allow.length > 0) reply.header('allow', allow.join(', '));
    return reply.code(err.statusCode).send(err.body());
  });
}

/**
 * Which methods the app serves on a URL, for the 405 of a path that exists under another method: every
 * route is mirrored (method and path only) into a router of its own as it is added. Call before the routes.
 */
function allowedMethods(app: FastifyInstance): (method: string, url: string) => string[] {
  // The same matching rules as the server's router (see instance.ts).
  const routes = Router({ ignoreTrailingSlash: true });
  const methods = new Set<Router.HTTPMethod>();
  const noop = () => {};
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat().map((m) => m.toUpperCase() as Router.HTTPMethod)) {
      if (routes.hasRoute(method, route.url)) continue;
      routes.on(method, route.url, noop);
      methods.add(method);
    }
  });
  return (method, url) => {
    const path = url.split('?', 1)[0]!;
    return [...methods].filter((m) => m !== method && routes.find(m, path)).sort();
  };
}
