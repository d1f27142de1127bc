import type { Types } from 'mongoose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers, type RunningWorkers } from '../../src/workers/runtime.js';
import {
  eventually,
  seedAccount,
  seedStagedOnly,
  setSupplierStatus,
  startPostImportEnv,
  type PostImportEnv,
} from './fixtures.js';
import { startStripeEmulator, type StripeEmulator } from './stripe-emulator.js';
import { redisKeys } from '../../src/infra/redis-keys.js';

const WAIT_MS = 1_500;
let env: PostImportEnv;
let stripe: StripeEmulator;
let workers: RunningWorkers;

beforeAll(async () => {
  // The slow vendor answers a second after the API has stopped waiting, well within the vendor timeout.
  stripe = await startStripeEmulator(WAIT_MS + 1_000);
  env = await startPostImportEnv('payments', {
    STRIPE_API_KEY: 'sk_test_emulated',
    STRIPE_API_BASE: stripe.url,
    PAYMENT_VERIFICATION_WAIT_MS: String(WAIT_MS),
    PAYMENT_VENDOR_TIMEOUT_MS: '10000',
  });
  workers = startWorkers({ config: env.t.config, db: env.t.app.db, log: pino({ level: 'silent' }) }, [
    'payment-verification',
  ]);
  await seedStagedOnly(env, 'EXT-STAGED');
});
afterAll(async () => {
  await workers?.close();
  await env?.close();
  await stripe?.close();
});

let seq = 0;
async function freshAccount() {
  const external = `EXT-PI-${++seq}`;
  const { account, number } = await seedAccount(env, external);
  return { external, accountId: account._id, number };
}
const request = (external: string, reference: string, type = 'CARD', vendor = 'STRIPE') => ({
  import_supplier: env.supplier,
  external_account_number: external,
  vendor,
  reference,
  type,
});
const create = (body: unknown) => env.post('payment-instruction/create/', body);
const instructions = (accountId: Types.ObjectId) =>
  env.t.app.db.models.PaymentInstruction.find({ accountId }).lean();
/** The counts of the account's `post_import.completed-v1` events for its payment instruction. */
const completedCounts = async (external: string) =>
  (
    await env.t.app.db.models.ImportEvent.find({
      type: 'data_import.import_process.post_import.completed-v1',
      externalAccountNumber: external,
    }).lean()
  )
    .map((e) => JSON.parse(e.data) as { resource: string; count: number })
    .filter((d) => d.resource === 'payment_instruction')
    .map((d) => d.count);

describe('POST /v1/data-import/payment-instruction/create/ against a Stripe-compatible server', () => {
  it('records an existing card and answers 201; the same request again is 201 ALREADY_ACTIVE with no second record', async () => {
    const { external, accountId, number } = await freshAccount();
    const res = await create(request(external, 'pm_ok_1'));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      kraken_account_number: number,
      reference: 'pm_ok_1',
      status: 'PAYMENT_INSTRUCTION_CREATED',
    });
    const stored = await instructions(accountId);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      vendor: 'STRIPE',
      type: 'CARD',
      status: 'ACTIVE',
      vendorDetails: { brand: 'visa', last4: '4242' },
    });

    const again = await create(request(external, 'pm_ok_1'));
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual({
      kraken_account_number: number,
      reference: 'pm_ok_1',
      status: 'PAYMENT_INSTRUCTION_ALREADY_ACTIVE',
    });
    expect(await instructions(accountId)).toHaveLength(1);
    expect(stripe.calls('pm_ok_1')).toBe(1);
  });

  it('verifies a direct debit as an active mandate, and refuses an inactive one', async () => {
    const a = await freshAccount();
    expect((await create(request(a.external, 'mandate_ok_1', 'DIRECT_DEBIT'))).statusCode).toBe(201);
    const b = await freshAccount();
    const inactive = await create(request(b.external, 'mandate_inactive_1', 'DIRECT_DEBIT'));
    expect(inactive.statusCode).toBe(400);
    expect(inactive.json().code).toBe('vendor_instruction_not_found');
  });

  it('answers 400 vendor_instruction_not_found for a missing, expired or non-card instruction, without retrying', async () => {
    for (const reference of ['pm_missing_1', 'pm_ok_expired_1', 'pm_sepa_1']) {
      const { external, accountId } = await freshAccount();
      const res = await create(request(external, reference));
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        detail: 'The payment vendor has no usable instruction with this reference.',
        code: 'vendor_instruction_not_found',
        errors: [],
      });
      expect(stripe.calls(reference)).toBe(1);
      expect(await instructions(accountId)).toHaveLength(0);
    }
  });

  it('retries inside the job: 503 twice then 200 gives 201', async () => {
    const { external, accountId } = await freshAccount();
    const res = await create(request(external, 'pm_flaky_1'));
    expect(res.statusCode).toBe(201);
    expect(stripe.calls('pm_flaky_1')).toBe(3);
    expect(await instructions(accountId)).toHaveLength(1);
  });

  it('answers 500 vendor_unavailable within the wait when the vendor always fails', async () => {
    const { external, accountId } = await freshAccount();
    const started = Date.now();
    const res = await create(request(external, 'pm_down_1'));
    const elapsed = Date.now() - started;
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      detail: 'The payment vendor could not be reached. Retry unchanged.',
      code: 'vendor_unavailable',
    });
    expect(elapsed).toBeLessThan(WAIT_MS + 500);
    expect(stripe.calls('pm_down_1')).toBeGreaterThan(2);
    expect(await instructions(accountId)).toHaveLength(0);

    // Retrying unchanged asks the vendor again (the finished job is not replayed).
    const before = stripe.calls('pm_down_1');
    expect((await create(request(external, 'pm_down_1'))).statusCode).toBe(500);
    expect(stripe.calls('pm_down_1')).toBeGreaterThan(before);
  });

  it('answers 500 when the vendor is slower than the wait; client retries converge on one instruction', async () => {
    const { external, accountId, number } = await freshAccount();
    const started = Date.now();
    const first = await create(request(external, 'pm_slow_1'));
    expect(first.statusCode).toBe(500);
    expect(first.json().code).toBe('vendor_unavailable');
    expect(Date.now() - started).toBeLessThan(WAIT_MS + 500);

    // An immediate retry joins the verification still under way, which then succeeds.
    const retry = await create(request(external, 'pm_slow_1'));
    expect(retry.statusCode).toBe(201);
    // It joined the verification that made the instruction active: for this client it is created now.
    expect(retry.json()).toEqual({
      kraken_account_number: number,
      reference: 'pm_slow_1',
      status: 'PAYMENT_INSTRUCTION_CREATED',
    });
    const later = await create(request(external, 'pm_slow_1'));
    expect(later.statusCode).toBe(201);
    expect(later.json().status).toBe('PAYMENT_INSTRUCTION_ALREADY_ACTIVE');
    expect(await instructions(accountId)).toHaveLength(1);
    expect(stripe.calls('pm_slow_1')).toBe(1);
    // One instruction, one event, whichever request recorded it.
    expect(await completedCounts(external)).toEqual([1]);
  });

  it("records a slow vendor's late answer, so a retry after it finished is 201 without asking again", async () => {
    const { external, accountId } = await freshAccount();
    expect((await create(request(external, 'pm_slow_2'))).statusCode).toBe(500);
    await eventually(
      async () => (await instructions(accountId)).length === 1,
      10_000,
      'late instruction recorded',
    );
    const retry = await create(request(external, 'pm_slow_2'));
    expect(retry.statusCode).toBe(201);
    expect(retry.json().status).toBe('PAYMENT_INSTRUCTION_ALREADY_ACTIVE');
    expect(await instructions(accountId)).toHaveLength(1);
    expect(stripe.calls('pm_slow_2')).toBe(1);
    // The instruction's event, recorded by the request that found it (the first one had stopped waiting).
    expect(await completedCounts(external)).toEqual([1]);
    expect((await create(request(external, 'pm_slow_2'))).statusCode).toBe(201);
    expect(await completedCounts(external)).toEqual([1]);
  });

  it('refuses a second, different instruction with account_has_active_payment_instruction', async () => {
    const { external, accountId } = await freshAccount();
    expect((await create(request(external, 'pm_ok_first'))).statusCode).toBe(201);
    const other = await create(request(external, 'pm_ok_second'));
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ code: 'account_has_active_payment_instruction', errors: [] });
    expect(stripe.calls('pm_ok_second')).toBe(0);
    expect((await instructions(accountId)).map((i) => i.reference)).toEqual(['pm_ok_first']);
  });

  it('records one instruction when 10 identical requests race', async () => {
    const { external, accountId } = await freshAccount();
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => create(request(external, 'pm_ok_race'))),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
    // A request that found nothing active ran (or joined) the verification; one arriving after it found it active.
    const statuses = responses.map((r) => r.json().status as string);
    expect(statuses).toContain('PAYMENT_INSTRUCTION_CREATED');
    expect(
      statuses.filter(
        (s) => !['PAYMENT_INSTRUCTION_CREATED', 'PAYMENT_INSTRUCTION_ALREADY_ACTIVE'].includes(s),
      ),
    ).toEqual([]);
    expect(await instructions(accountId)).toHaveLength(1);
  });

  it('answers 400 for invalid values, 404 for unknown or staged-only accounts, 400 when the supplier is Paused', async () => {
    const { external } = await freshAccount();
    const invalid = await create({ ...request(external, 'pm_ok_x', 'CHEQUE', 'PAYPAL') });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.json().errors.map((e: { attr: string; code: string }) => `${e.attr}:${e.code}`)).toEqual([
      'type:invalid_choice',
      'vendor:invalid_choice',
    ]);
    for (const ext of ['EXT-NOPE', 'EXT-STAGED']) {
      const res = await create(request(ext, 'pm_ok_x'));
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('account_not_found');
    }
    await setSupplierStatus(env, 'Paused');
    try {
      const res = await create(request(external, 'pm_ok_x'));
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('import_supplier_migration_not_ongoing');
    } finally {
      await setSupplierStatus(env, 'Ongoing');
    }
  });
});

describe('a retry after a finished verification', () => {
  it('asks the vendor again, and never answers the previous result when it cannot remove the old job', async () => {
    const { external } = await freshAccount();
    const first = await create(request(external, 'pm_missing_retry'));
    expect(first.json().code).toBe('vendor_instruction_not_found');
    const queue = env.t.app.queues.queue('payment-verification');
    const job = (await queue.getJobs(['completed'])).find((j) => j.data.reference === 'pm_missing_retry')!;
    // A lock on the finished job stops BullMQ from removing it.
    const client = env.t.app.redis;
    const lock = redisKeys(env.t.config.QUEUE_PREFIX).jobLock('payment-verification', job.id!);
    await client.set(lock, 'another-worker');
    try {
      const refused = await create(request(external, 'pm_missing_retry'));
      expect(refused.statusCode).toBe(500);
      expect(refused.json().code).toBe('internal_error');
      expect(stripe.calls('pm_missing_retry')).toBe(1);
    } finally {
      await client.del(lock);
    }
    const again = await create(request(external, 'pm_missing_retry'));
    expect(again.json().code).toBe('vendor_instruction_not_found');
    expect(stripe.calls('pm_missing_retry')).toBe(2);
  });
});

describe('payment vendors a deployment has not enabled', () => {
  it('refuses SIMULATED as invalid_choice when PAYMENT_VENDORS does not list it', async () => {
    const stripeOnly = await startPostImportEnv('payments_off', { PAYMENT_VENDORS: 'STRIPE' });
    try {
      await seedAccount(stripeOnly, 'EXT-OFF-1');
      const res = await stripeOnly.post('payment-instruction/create/', {
        import_supplier: stripeOnly.supplier,
        external_account_number: 'EXT-OFF-1',
        vendor: 'SIMULATED',
        reference: 'sim_ok_1',
        type: 'CARD',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'request_failed_validation',
        errors: [{ code: 'invalid_choice', attr: 'vendor' }],
      });
      expect(await stripeOnly.t.app.db.models.PaymentInstruction.countDocuments()).toBe(0);
    } finally {
      await stripeOnly.close();
    }
  });
});

describe('a vendor listed without its configuration', () => {
  it('STRIPE without STRIPE_API_KEY is not enabled: invalid_choice naming the enabled vendors, not a retryable 500', async () => {
    const unkeyed = await startPostImportEnv('stripe_unkeyed', { PAYMENT_VENDORS: 'STRIPE,SIMULATED' });
    try {
      await seedAccount(unkeyed, 'EXT-NOKEY-1');
      const res = await unkeyed.post('payment-instruction/create/', {
        import_supplier: unkeyed.supplier,
        external_account_number: 'EXT-NOKEY-1',
        vendor: 'STRIPE',
        reference: 'pm_ok_1',
        type: 'CARD',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'request_failed_validation',
        errors: [{ code: 'invalid_choice', attr: 'vendor', detail: expect.stringContaining('SIMULATED') }],
      });
      expect(res.json().errors[0].detail).not.toContain('STRIPE;');
      expect(await unkeyed.t.app.db.models.PaymentInstruction.countDocuments()).toBe(0);
    } finally {
      await unkeyed.close();
    }
  });
});

describe('the SIMULATED vendor', () => {
  it('decides by reference prefix: sim_ok and sim_flaky exist, sim_down is 500, others 400', async () => {
    const expectations: [string, number][] = [
      ['sim_ok_1', 201],
      ['sim_flaky_1', 201],
      ['sim_down_1', 500],
      ['nope_1', 400],
    ];
    for (const [reference, status] of expectations) {
      const { external } = await freshAccount();
      const res = await create(request(external, reference, 'CARD', 'SIMULATED'));
      expect({ reference, status: res.statusCode }).toEqual({ reference, status });
    }
  });
});
