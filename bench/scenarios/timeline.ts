import { WebhookOperations } from '../../src/use-cases/admin/webhooks.js';
import { startReceiver } from '../../test/webhooks/receiver.js';
import { creationEnv, SUPPLIER } from '../creation-env.js';
import { latencySummary, percentile, round, type Scenario } from '../support.js';

const ACCOUNTS = Number(process.env.BENCH_TIMELINE_ACCOUNTS ?? 10);
const REQUESTS = Number(process.env.BENCH_TIMELINE_REQUESTS ?? 500);
const WARMUP = 50;
const GOAL_P95_MS = 100;

/** Yesterday (UTC): inside the realistic account's open statement period, never in the future. */
const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);

/**
 * The per-account timeline (issue 48): `GET …/accounts/<code>/<external>/timeline/` over real HTTP (keep-alive,
 * one request at a time, round robin over the accounts) from an in-process API server. Each account is the
 * realistic one (about 200 transactions over two ledgers), created through v1 stage and create on in-process
 * workers, then given 3 post-import writes (notes, and two transaction batches); an endpoint subscribed to every
 * event receives its webhooks (the account's PROCESSED and the three writes), so the timeline reads the history,
 * the journal, the post-import events and the deliveries. Goal: p95 at most 100 ms.
 */
const scenario: Scenario = {
  name: 'timeline',
  description: `GET timeline/ of realistic accounts (~200 transactions) with 3 post-import writes and 4 webhook deliveries each: latency over ${REQUESTS} requests (${ACCOUNTS} accounts, round robin), goal p95 <= ${GOAL_P95_MS} ms`,
  async run(env) {
    const config = env.config({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_ACTIVATION_DELAY_MS: '0' });
    const e = await creationEnv(config, { payload: 'realistic' });
    const receiver = await startReceiver();
    try {
      await new WebhookOperations(e.app.storage, config).add('Bench Org', receiver.url, []);
      const externals = Array.from({ length: ACCOUNTS }, (_, i) => `TL-${String(i).padStart(4, '0')}`);
      const post = async (external: string, path: string, body: Record<string, unknown>) => {
        const res = await e.app.inject({
          method: 'POST',
          url: `/v1/data-import/${path}`,
          headers: e.headers,
          payload: JSON.stringify({ import_supplier: SUPPLIER, external_account_number: external, ...body }),
        });
        if (res.statusCode !== 201) throw new Error(`${path} ${external}: ${res.statusCode} ${res.body}`);
      };
      const batch = (external: string, n: number) => ({
        transactions: Array.from({ length: 10 }, (_, i) => ({
          transaction_id: `${external}-PI-${n}-${i}`,
          transaction_date: yesterday(),
          amount: '12.34',
          type: 'PAYMENT',
          payment_type: 'BANK_TRANSFER',
        })),
      });
      for (const external of externals) {
        if ((await e.stage(external)).statusCode !== 201) throw new Error(`stage ${external}`);
        const created = await e.create(external);
        if (created.statusCode !== 201) throw new Error(`create ${external}: ${created.body}`);
        await post(external, 'notes/create/', {
          notes: [{ body: 'Migrated.' }, { body: 'Prefers e-mail.' }],
        });
        await post(external, 'transactions/create/', batch(external, 1));
        await post(external, 'transactions/create/', batch(external, 2));
      }
      const deadline = Date.now() + 120_000;
      while (receiver.ids().size < ACCOUNTS * 4) {
        if (Date.now() > deadline) throw new Error(`webhooks: ${receiver.ids().size} of ${ACCOUNTS * 4}`);
        await new Promise((r) => setTimeout(r, 50));
      }

      const address = await e.app.listen({ port: 0, host: '127.0.0.1' });
      const url = (external: string) =>
        `${address}/v2/data-import/accounts/${SUPPLIER}/${external}/timeline/`;
      let steps = 0;
      const once = async (external: string) => {
        const t0 = performance.now();
        const res = await fetch(url(external), { headers: e.headers });
        const body = (await res.json()) as { steps?: { step: string }[]; why?: { code: string } };
        const ms = performance.now() - t0;
        const hooks = body.steps?.filter((s) => s.step === 'webhook').length ?? 0;
        if (res.status !== 200 || body.why?.code !== 'done' || hooks !== 4)
          throw new Error(`timeline of ${external}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
        steps = body.steps!.length;
        return ms;
      };
      for (let i = 0; i < WARMUP; i++) await once(externals[i % ACCOUNTS]!);
      const samples: number[] = [];
      for (let i = 0; i < REQUESTS; i++) samples.push(await once(externals[i % ACCOUNTS]!));
      const p95 = round(
        percentile(
          [...samples].sort((a, b) => a - b),
          95,
        ),
      );
      return {
        accounts: ACCOUNTS,
        steps_per_timeline: steps,
        latency: { ...latencySummary(samples), p95_ms: p95 },
        goal_p95_ms: GOAL_P95_MS,
        within_goal: p95 <= GOAL_P95_MS,
      };
    } finally {
      await receiver.close();
      await e.close();
    }
  },
};
export default scenario;
