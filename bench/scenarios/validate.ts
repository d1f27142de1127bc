import autocannon from 'autocannon';
import type { FastifyInstance } from 'fastify';
import { Operations } from '../../src/admin/operations.js';
import { createApiServer } from '../../src/api/instance.js';
import { validateAccount } from '../../src/domain/validation/index.js';
import { largeAccountPayload, testContext } from '../../test/domain/fixtures.js';
import { graphqlToken } from '../../test/support/app.js';
import { round, type Scenario } from '../support.js';

const DURATION_S = 10;
const CONNECTIONS = 10;

async function load(url: string, body: string, headers: Record<string, string>) {
  const result = await autocannon({
    url,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
    connections: CONNECTIONS,
    duration: DURATION_S,
  });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`${url}: ${bad} failed requests`);
  return {
    requests_per_s: round(result.requests.average, 1),
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
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

/** Validation cost: validate-account against a route that only parses the same body, in one run. */
const scenario: Scenario = {
  name: 'validate',
  description: `POST validate-account with a ~50 KB account (2 supply points, 200 transactions) vs a parse-only route; ${CONNECTIONS} connections, ${DURATION_S} s each`,
  async run(env) {
    const config = env.config({ LOG_LEVEL: 'warn' });
    const app: FastifyInstance = await createApiServer(config);
    app.post('/bench/parse-only', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const payload = largeAccountPayload();
      const ops = new Operations(app.db.models, config.API_KEY_HASH_SECRET);
      const org = await ops.createOrganisation('Bench Org');
      await ops.createSupplier(payload.import_supplier, 'Bench Org');
      const token = (await graphqlToken(app, { APIKey: org.api_key })).body.data!.obtainKrakenToken.token;
      const body = JSON.stringify(payload);
      const address = app.server.address();
      const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const check = await fetch(`${base}/v1/data-import/validate-account/`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
      });
      if (check.status !== 200)
        throw new Error(`validate-account answered ${check.status}: ${await check.text()}`);

      const parseOnly = await load(`${base}/bench/parse-only`, body, {});
      const validate = await load(`${base}/v1/data-import/validate-account/`, body, {
        authorization: `Token ${token}`,
      });
      // The same work without HTTP, auth or serialisation: what validation itself costs next to parsing.
      const ctx = testContext();
      const inProcess = {
        json_parse_ms: msPerCall(body, () => JSON.parse(body)),
        validate_account_ms: msPerCall(body, (input) => validateAccount(input, ctx)),
      };
      return {
        body_bytes: Buffer.byteLength(body),
        in_process: inProcess,
        parse_only: parseOnly,
        validate,
        throughput_ratio: round(validate.requests_per_s / parseOnly.requests_per_s, 3),
        goal: 'throughput_ratio >= 0.5',
      };
    } finally {
      await app.db.conn.dropDatabase();
      await app.close();
    }
  },
};
export default scenario;
