import { isDatabaseUnavailable } from '../../infra/mongo.js';

/**
 * Write conflicts the database reports as retryable: MongoDB's WriteConflict / transient labels, and the
 * "database is locked" (SQLITE_BUSY) of FerretDB's SQLite backend under concurrent writers. Every write
 * retried here is idempotent (upserts, conditional updates, inserts of derived ids).
 */
export function isTransientDbError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  // An unreachable database is not a conflict: retrying at once would only hold the request (and its caller).
  if (isDatabaseUnavailable(err)) return false;
  const e = err as {
    code?: number;
    message?: string;
    errorLabels?: string[] | Set<string>;
    writeErrors?: Array<{ errmsg?: string; err?: { errmsg?: string } }>;
  };
  const labels = e.errorLabels ? [...e.errorLabels] : [];
  const messages = [
    e.message ?? '',
    ...(e.writeErrors ?? []).map((w) => w.errmsg ?? w.err?.errmsg ?? ''),
  ].join('\n');
  return (
    e.code === 112 ||
    labels.includes('TransientTransactionError') ||
    labels.includes('RetryableWriteError') ||
    /SQLITE_BUSY|database is locked/i.test(messages)
  );
}

export async function retryTransient<T>(fn: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= attempts || !isTransientDbError(err)) throw err;
      await new Promise((r) => setTimeout(r, attempt * 20 + Math.random() * 50));
    }
  }
}
