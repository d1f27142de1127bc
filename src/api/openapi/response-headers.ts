// Response headers that no zod route schema carries: the creation's fair-share headers and Retry-After.

type Response = Record<string, unknown> & { headers?: Record<string, object> };
type Operation = Record<string, unknown> & { operationId?: string; responses?: Record<string, Response> };
type Document = { paths?: object };

const integer = { type: 'integer', minimum: 0 };

const shareHeaders = {
  'X-Creation-Share': {
    description:
      'The slots of the global creation limit the caller’s organisation may hold at once now: the limit times ' +
      'its weight over the weights of the organisations holding or waiting for a slot, rounded up (the whole ' +
      'limit when it is alone). Absent without a limit, or when Redis could not say.',
    schema: integer,
  },
  'X-Creation-Share-Remaining': {
    description: 'What is left of that share now (after this create took its slot, when it did).',
    schema: integer,
  },
};

const retryAfter = (description: string) => ({
  'Retry-After': { description, schema: { type: 'integer', minimum: 1 } },
});

/** The headers of each answer of an operation, by operation id and status. */
const headers: Record<string, Record<string, Record<string, object>>> = {
  createAccount: {
    201: shareHeaders,
    400: shareHeaders,
    429: {
      ...shareHeaders,
      ...retryAfter(
        'Seconds before trying again, from the caller’s own position: the slots its organisation holds past its ' +
          'share and its creations waiting, times the mean time a slot is held, over the slots it holds (at least 1).',
      ),
    },
    503: retryAfter('10 for account_creation_pending, 5 for service_unavailable.'),
  },
};

/** Adds the documented response headers to their operations' answers. */
export function addResponseHeaders(document: Document): void {
  for (const item of Object.values((document.paths ?? {}) as Record<string, Record<string, Operation>>)) {
    for (const operation of Object.values(item ?? {})) {
      const byStatus = operation.operationId ? headers[operation.operationId] : undefined;
      for (const [status, values] of Object.entries(byStatus ?? {})) {
        const response = operation.responses?.[status];
        if (!response) throw new Error(`${operation.operationId}: no ${status} answer to add headers to`);
        response.headers = { ...response.headers, ...values };
      }
    }
  }
}
