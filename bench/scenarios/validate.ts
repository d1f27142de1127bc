import autocannon from 'autocannon';
import type { FastifyInstance } from 'fastify';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { createApiServer } from '../../src/api/http/instance.js';
import type { Config } from '../../src/config.js';
import { validateAccount } from '../../src/domain/validation/index.js';
import { validateAccountText } from '../../src/infra/validation-pool/account-text.js';
import { largeAccountPayload, testContext } from '../../test/domain/fixtures.js';
import { graphqlToken } from '../../test/support/app.js';
import { round, type Scenario } from '../support.js';

const DURATION_S = 10;
const WARMUP_S = 2;
const CONNECTIONS = 10;

async function load(url: string, body: string, headers: Record<string, string>, duration = DURATION_S) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await autocannon({
    url,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    connections: CONNECTIONS,
    duration,
  });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`${url}: ${bad} failed requests`);
  const used = process.cpuUsage(cpu);
  return {
    requests_per_s: round(result.requests.average, 1),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    // Every thread of this process (event loop with autocannon, validation threads, GC helpers).
    cpu_cores: round((used.user + used.system) / 1000 / (performance.now() - started), 2),
  };
}

/** Milliseconds per call of `fn` over fresh parsed bodies (best of 5 rounds, after a warm-up). */
function msPerCall(body: string, fn: (input: unknown) => unknown, calls = 200): number {
  const inputs = Array.from({ length: 20 }, () => JSON.parse(body) as unknown);
  for (let i = 0; i < calls; i++) fn(inputs[i % inputs.length]);
  let best = Infinity;
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) fn(inputs[i % inputs.length]);
    best = Math.min(best, (performance.now() - start) / calls);
  }
  return round(best, 3);
}

/** A listening API with an organisation, the payload's supplier and a token; the parse-only route too. */
async function startApi(config: Config, supplier: string) {
  const app: FastifyInstance = await createApiServer(config);
  app.post('/bench/parse-only', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const ops = new Operations(app.storage, config.API_KEY_HASH_SECRET);
  const org = await ops.createOrganisation('Bench Org');
  await ops.createSupplier(supplier, 'Bench Org');
  const token = (await graphqlToken(app, { APIKey: org.api_key })).body.data!.obtainKrakenToken.token;
  const address = app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    app,
    base,
    headers: { authorization: `Token ${token}` },
    stop: async () => {
      await app.db.conn.dropDatabase();
      await app.close();
    },
  };
}

// VALIDATION_THREADS from the environment overrides the service default for this scenario.
const threads = process.env.VALIDATION_THREADS;

/**
 * Validation cost: validate-account against a route that only parses the same body, in one run. The goal
 * compares the service as configured (validation on its worker threads) with parse-only; the same route
 * validating on the event loop (VALIDATION_THREADS=0) shows what one request costs a single thread.
 */
const scenario: Scenario = {
  name: 'validate',
  description:
    `POST validate-account with a ~56 KB account (2 supply points, 200 transactions) vs a parse-only route; ` +
    `validate-account on the validation threads (throughput_ratio, the goal) and on the event loop ` +
    `(VALIDATION_THREADS=0, inline_throughput_ratio); server and autocannon in one process, ` +
    `${CONNECTIONS} connections, ${DURATION_S} s each after ${WARMUP_S} s of warm-up`,
  async run(env) {
    const payload = largeAccountPayload();
    const body = JSON.stringify(payload);
    // The same work without HTTP or auth, before any load: what validation itself costs next to parsing
    // (on parsed bodies, reused), and the whole task a validation thread runs per request (parse, validate
    // and serialise the answer, from the raw text each time).
    const ctx = testContext();
    const inProcess = {
      json_parse_ms: msPerCall(body, () => JSON.parse(body)),
      validate_account_ms: msPerCall(body, (input) => validateAccount(input, ctx)),
      thread_task_ms: msPerCall(body, () => validateAccountText(body, ctx)),
    };
    const pooledConfig = env.config({
      LOG_LEVEL: 'warn',
      ...(threads ? { VALIDATION_THREADS: threads } : {}),
    });
    const pooled = await startApi(pooledConfig, payload.import_supplier);
    const inline = await startApi(
      env.config({ LOG_LEVEL: 'warn', VALIDATION_THREADS: '0' }),
      payload.import_supplier,
    );
    try {
      for (const api of [pooled, inline]) {
        const check = await fetch(`${api.base}/v1/data-import/validate-account/`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', ...api.headers },
        });
        if (check.status !== 200)
          throw new Error(`validate-account answered ${check.status}: ${await check.text()}`);
      }

      // Each route under load first for a moment (JIT, and the pool starting its threads), then measured.
      const measure = async (url: string, headers: Record<string, string>) => {
        await load(url, body, headers, WARMUP_S);
        return load(url, body, headers);
      };
      const parseOnly = await measure(`${pooled.base}/bench/parse-only`, {});
      const validate = await measure(`${pooled.base}/v1/data-import/validate-account/`, pooled.headers);
      const validateInline = await measure(`${inline.base}/v1/data-import/validate-account/`, inline.headers);
      return {
        body_bytes: Buffer.byteLength(body),
        validation_threads: pooledConfig.VALIDATION_THREADS,
        in_process: inProcess,
        parse_only: parseOnly,
        validate,
        validate_inline: validateInline,
        throughput_ratio: round(validate.requests_per_s / parseOnly.requests_per_s, 3),
        inline_throughput_ratio: round(validateInline.requests_per_s / parseOnly.requests_per_s, 3),
        goal: 'throughput_ratio >= 0.5',
      };
    } finally {
      await pooled.stop();
      await inline.stop();
    }
  },
};
export default scenario;
