import { Agent, request as undiciRequest } from 'undici';

/**
 * The client's HTTP side: tokens (obtained from the API key, refreshed before they expire and again after a
 * 401), and requests that wait out what the server asks them to (429 and 503 with `Retry-After`, network
 * errors) instead of counting them as failures. Only the public API is used.
 */

export type Answer = { status: number; body: unknown; attempts: number };

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

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

export class UsageError extends Error {}

export class ApiClient {
  /** Keep-alive connections for the API calls: undici's own request is lighter than fetch on the client's CPU. */
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 256 });
  private token: { value: string; refresh: string | null; expiresAt: number } | null = null;
  private pendingToken: Promise<string> | null = null;
  /** Answers the server asked the client to retry later (429, 503), for the summary. */
  throttled = 0;

  constructor(
    readonly baseUrl: string,
    private readonly apiKey: string,
    private readonly options: { maxAttempts?: number; signal?: AbortSignal } = {},
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
    if (!forceNew && this.token && this.token.expiresAt - Date.now() > 60_000) return this.token.value;
    this.pendingToken ??= this.obtainToken(forceNew).finally(() => (this.pendingToken = null));
    return this.pendingToken;
  }

  private async obtainToken(forceNew: boolean): Promise<string> {
    const viaRefresh = !forceNew && this.token?.refresh ? { refreshToken: this.token.refresh } : null;
    const input = viaRefresh ?? { APIKey: this.apiKey };
    for (let attempt = 1; ; attempt++) {
      let res: Response;
      try {
        res = await fetch(`${this.baseUrl}/v1/graphql/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: TOKEN_MUTATION, variables: { input } }),
        });
      } catch (err) {
        if (attempt >= 5)
          throw new Error(`cannot reach ${this.baseUrl}: ${(err as Error).message}`, { cause: err });
        await sleep(500 * attempt);
        continue;
      }
      if (res.status === 503 && attempt < 5) {
        await sleep(retryAfterMs(res.headers.get('retry-after'), 2_000));
        continue;
      }
      const body = (await res.json().catch(() => null)) as {
        data?: { obtainKrakenToken?: { token: string; refreshToken: string } | null };
        errors?: { message: string }[];
      } | null;
      const got = body?.data?.obtainKrakenToken;
      if (!got) {
        if (viaRefresh) return this.obtainToken(true);
        throw new UsageError(`the API key was refused: ${body?.errors?.[0]?.message ?? res.status}`);
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

  /**
   * A JSON request. 429 and 503 (with `Retry-After`, plus jitter) and network errors are retried up to
   * `maxAttempts`; so are 502 and 504, which only a load balancer or proxy in front of the service answers
   * (the web it sent the request to died or did not answer in time: the request may have been acted on, and
   * sending it again is safe because every write of the API is idempotent). A 401 is retried once with a new
   * token. Every other answer is returned as it is.
   */
  async close(): Promise<void> {
    await this.agent.close();
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    options: { retry503?: boolean } = {},
  ): Promise<Answer> {
    const maxAttempts = this.options.maxAttempts ?? 20;
    let renewed = false;
    for (let attempt = 1; ; attempt++) {
      const token = await this.bearer();
      let res: { status: number; text: string; retryAfter: string | null };
      try {
        const answer = await undiciRequest(`${this.baseUrl}${path}`, {
          method: method as 'GET',
          dispatcher: this.agent,
          headers: {
            authorization: `Token ${token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        });
        const retryAfter = answer.headers['retry-after'];
        res = {
          status: answer.statusCode,
          text: await answer.body.text(),
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
        };
      } catch (err) {
        if (attempt >= maxAttempts) throw err;
        await sleep(Math.min(10_000, 250 * 2 ** Math.min(attempt, 6)), this.options.signal);
        continue;
      }
      const text = res.text;
      if ((res.status === 502 || res.status === 504) && attempt < maxAttempts) {
        await sleep(Math.min(10_000, 250 * 2 ** Math.min(attempt, 6)), this.options.signal);
        continue;
      }
      if (res.status === 401 && !renewed) {
        renewed = true;
        await this.bearer(true);
        attempt--;
        continue;
      }
      if (
        (res.status === 429 || (res.status === 503 && options.retry503 !== false)) &&
        attempt < maxAttempts
      ) {
        this.throttled++;
        const wait = retryAfterMs(res.retryAfter, 1_000);
        await sleep(wait + Math.floor(Math.random() * Math.min(1_000, wait / 2 + 100)), this.options.signal);
        continue;
      }
      return { status: res.status, body: parseBody(text), attempts: attempt };
    }
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
