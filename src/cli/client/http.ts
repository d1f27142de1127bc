import { Agent, request as undiciRequest } from 'undici';
import { Interrupted, pause } from './stop.js';

/**
 * The client's HTTP side: tokens (obtained from the API key, refreshed before they expire and again after a
 * 401), and requests that wait out what the server asks them to (429 and 503 with `Retry-After`, network
 * errors) instead of counting them as failures. Only the public API is used.
 */

/** `creationShare`: a create answer's `X-Creation-Share` (the slots the organisation may hold now), else null. */
export type Answer = { status: number; body: unknown; attempts: number; creationShare: number | null };

const TOKEN_MUTATION =
  'mutation Obtain($input: ObtainJSONWebTokenInput!) { obtainKrakenToken(input: $input) { token refreshToken } }';

/** Seconds in a `Retry-After` header (delta-seconds or an HTTP date), else the fallback. */
export function retryAfterMs(header: string | null, fallbackMs: number): number {
  if (!header) return fallbackMs;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? fallbackMs : Math.max(0, at - Date.now());
}

export class UsageError extends Error {}

/**
 * The service refused the API key itself (`INVALID_API_KEY`: revoked, or never valid). Before a run starts
 * it is a usage error like any other; during a run it stops the run (see `runLines`).
 */
export class KeyRefused extends UsageError {}

/** How long a request answered 429 is retried as its `Retry-After` says, unless told otherwise (--poll-timeout). */
export const DEFAULT_THROTTLE_TIMEOUT_MS = 1_800_000;

/** Backoff after the n-th failure (network error, 502, 504): 0.5 s doubling to 10 s. */
const backoff = (failures: number) => Math.min(10_000, 250 * 2 ** Math.min(failures, 6));
/** A wait the server asked for, with jitter so that the lines it throttled do not come back at once. */
const jittered = (ms: number) => ms + Math.floor(Math.random() * Math.min(1_000, ms / 2 + 100));

type RawAnswer = { status: number; text: string; retryAfter: string | null; creationShare: number | null };

export type ApiClientOptions = {
  /** Attempts of a request that fails (network error, 502, 504, 503): then its error or answer is returned. */
  maxAttempts?: number;
  /** How long a request answered 429 is sent again (as `Retry-After` says) before the 429 is returned. */
  throttleTimeoutMs?: number;
  /** Aborted: every wait of a request (the request itself, a retry's pause) ends with `Interrupted`. */
  cancelled?: AbortSignal;
  /**
   * Hears every answer (its status, round trip, the wait a 429 or 503 asked for, and the request's kind: its
   * method and the first four segments of its path, which leave out the account): see concurrency.ts.
   */
  observe?: (status: number, ms: number, retryAfterMs: number | null, kind: string, resent: boolean) => void;
};

export class ApiClient {
  /** Keep-alive connections for the API calls: undici's own request is lighter than fetch on the client's CPU. */
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  private token: { value: string; refresh: string | null; expiresAt: number } | null = null;
  private pendingToken: Promise<string> | null = null;
  /** Once the key is refused, every request is: the service is not asked again. */
  private refused: KeyRefused | null = null;
  /** Answers the server asked the client to retry later (429, 503), for the summary. */
  throttled = 0;

  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly options: ApiClientOptions = {},
  ) {}

  private organisationId: string | null = null;

  /** The organisation the API key belongs to (the token's subject): obtains a token if none yet. */
  async organisation(): Promise<string> {
    await this.bearer();
    if (!this.organisationId) throw new UsageError('the token names no organisation');
    return this.organisationId;
  }

  /** A valid token, obtained once and shared by every request in flight; renewed a minute before expiry. */
  private async bearer(forceNew = false): Promise<string> {
    if (this.refused) throw this.refused;
    if (!forceNew && this.token && this.token.expiresAt - Date.now() > 60_000) return this.token.value;
    this.pendingToken ??= this.obtainToken(forceNew).finally(() => (this.pendingToken = null));
    return this.pendingToken;
  }

  private async obtainToken(forceNew: boolean): Promise<string> {
    const viaRefresh = !forceNew && this.token?.refresh ? { refreshToken: this.token.refresh } : null;
    const input = viaRefresh ?? { APIKey: this.apiKey };
    const cancelled = this.options.cancelled;
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.baseUrl}/v1/graphql/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: TOKEN_MUTATION, variables: { input } }),
          signal: cancelled,
        });
      } catch (err) {
        if (cancelled?.aborted) throw new Interrupted();
        if (attempt >= 5)
          throw new Error(`cannot reach ${this.baseUrl}: ${(err as Error).message}`, { cause: err });
        await pause(500 * attempt, cancelled);
        continue;
      }
      if (res.status === 503 && attempt < 5) {
        await pause(retryAfterMs(res.headers.get('retry-after'), 2_000), cancelled);
        continue;
      }
      const body = (await res.json().catch(() => null)) as {
        data?: { obtainKrakenToken?: { token: string; refreshToken: string } | null };
        errors?: { message: string; extensions?: { errorCode?: string } }[];
      } | null;
      const got = body?.data?.obtainKrakenToken;
      if (!got) {
        if (viaRefresh) return this.obtainToken(true);
        const error = body?.errors?.[0];
        const message = `the API key was refused: ${error?.message ?? res.status}`;
        if (error?.extensions?.errorCode === 'INVALID_API_KEY')
          throw (this.refused = new KeyRefused(message));
        throw new UsageError(message);
      }
      const payload = JSON.parse(Buffer.from(got.token.split('.')[1] ?? '', 'base64url').toString()) as {
        exp?: number;
        sub?: string;
      };
      this.organisationId = payload.sub ?? null;
      this.token = {
        value: got.token,
        refresh: got.refreshToken,
        expiresAt: (payload.exp ?? Date.now() / 1000 + 600) * 1000,
      };
      return got.token;
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /**
   * A JSON request. A 429 is sent again as its `Retry-After` says (plus jitter) for as long as
   * `throttleTimeoutMs` allows from the first 429; a 503 (unless `retry503` is false) and network errors up to
   * `maxAttempts`; so are 502 and 504, which only a load balancer or proxy in front of the service answers
   * (the web it sent the request to died or did not answer in time: the request may have been acted on, and
   * sending it again is safe because every write of the API is idempotent). A 401 is retried once with a new
   * token; a key the service refuses then throws `KeyRefused`. Every other answer is returned as it is.
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    options: { retry503?: boolean } = {},
  ): Promise<Answer> {
    const maxAttempts = this.options.maxAttempts ?? 20;
    const throttleTimeoutMs = this.options.throttleTimeoutMs ?? DEFAULT_THROTTLE_TIMEOUT_MS;
    const cancelled = this.options.cancelled;
    let attempts = 0;
    let failures = 0;
    let renewed = false;
    let throttledSince: number | null = null;
    for (;;) {
      const token = await this.bearer();
      attempts++;
      let res: RawAnswer;
      const sent = performance.now();
      try {
        res = await this.send(method, path, body, token);
        const asked = res.retryAfter === null ? null : retryAfterMs(res.retryAfter, 1_000);
        const kind = `${method} ${path.split('/').slice(0, 5).join('/')}`;
        // `resent`: this request was refused before (429) and is sent again as the service asked.
        this.options.observe?.(res.status, performance.now() - sent, asked, kind, throttledSince !== null);
      } catch (err) {
        if (cancelled?.aborted) throw new Interrupted();
        if (++failures >= maxAttempts) throw err;
        await pause(backoff(failures), cancelled);
        continue;
      }
      if ((res.status === 502 || res.status === 504) && failures + 1 < maxAttempts) {
        await pause(backoff(++failures), cancelled);
        continue;
      }
      if (res.status === 401 && !renewed) {
        renewed = true;
        await this.bearer(true);
        attempts--;
        continue;
      }
      if (res.status === 429) {
        throttledSince ??= Date.now();
        const wait = jittered(retryAfterMs(res.retryAfter, 1_000));
        if (Date.now() + wait - throttledSince <= throttleTimeoutMs) {
          this.throttled++;
          await pause(wait, cancelled);
          continue;
        }
      }
      if (res.status === 503 && options.retry503 !== false && failures + 1 < maxAttempts) {
        failures++;
        this.throttled++;
        await pause(jittered(retryAfterMs(res.retryAfter, 1_000)), cancelled);
        continue;
      }
      return { status: res.status, body: parseBody(res.text), attempts, creationShare: res.creationShare };
    }
  }

  private async send(method: string, path: string, body: unknown, token: string): Promise<RawAnswer> {
    const answer = await undiciRequest(`${this.baseUrl}${path}`, {
      method: method as 'GET',
      dispatcher: this.agent,
      signal: this.options.cancelled,
      headers: {
        authorization: `Token ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const retryAfter = answer.headers['retry-after'];
    const share = Number(answer.headers['x-creation-share'] ?? NaN);
    return {
      creationShare: Number.isInteger(share) ? share : null,
      status: answer.statusCode,
      text: await answer.body.text(),
      retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
    };
  }
}

/** A JSON answer parsed; any other text as it is (null when empty). */
function parseBody(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
