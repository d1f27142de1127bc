import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { setupTenant, SUPPLIER } from '../creation/support.js';
import { planFor, type PlanApi } from './support.js';

const run = promisify(execFile);
const cli = resolve(import.meta.dirname, '../../src/cli/admin/main.ts');
let t: TestApp;
let plan: PlanApi;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cutover-cli' } });
  plan = planFor(t, (await setupTenant(t, 'CLI Plan Org')).headers);
});
afterAll(async () => t?.close());

async function admin(...args: string[]): Promise<{ code: number; out: any; err: string }> {
  const env = {
    ...process.env,
    MONGO_URL: t.config.MONGO_URL,
    JWT_SECRET: t.config.JWT_SECRET,
    API_KEY_HASH_SECRET: t.config.API_KEY_HASH_SECRET,
    LOG_LEVEL: 'silent',
    PAYMENT_VENDORS: '',
    REDIS_URL: t.config.REDIS_URL,
    REDIS_CLUSTER_NODES: t.config.REDIS_CLUSTER_NODES.map(({ host, port }) => `${host}:${port}`).join(','),
    QUEUE_PREFIX: t.config.QUEUE_PREFIX,
  };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], { env });
    return { code: 0, out: JSON.parse(stdout), err: stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, out: failure.stdout, err: failure.stderr };
  }
}

describe('import-admin plan', () => {
  it(
    'shows, pauses (with a reason, published once) and resumes a plan; errors for none',
    { timeout: 180_000 },
    async () => {
      const none = await admin('plan', 'show', SUPPLIER);
      expect([none.code, none.err.trim()]).toEqual([1, `error: supplier "${SUPPLIER}" has no cohort plan`]);
      expect((await admin('plan', 'pause', 'NO_SUCH')).err.trim()).toBe(
        'error: supplier "NO_SUCH" does not exist',
      );
      expect((await plan.put({ expected_accounts: 300, canary_accounts: 10 })).statusCode).toBe(200);

      const shown = await admin('plan', 'show', SUPPLIER);
      expect(shown.code).toBe(0);
      expect(shown.out).toMatchObject({
        import_supplier_code: SUPPLIER,
        expected_accounts: 300,
        status: 'ACTIVE',
      });
      const paused = await admin('plan', 'pause', SUPPLIER, '--reason', 'cutover rehearsal review');
      expect(paused.code).toBe(0);
      expect(paused.out).toMatchObject({
        status: 'PAUSED',
        pause: { reason: 'operator', detail: 'cutover rehearsal review', codes: [] },
      });
      expect((await plan.get()).json().pause.detail).toBe('cutover rehearsal review');
      const event = await t.app.db.models.ImportEvent.findById(`cohort:${SUPPLIER}@paused:1`).lean();
      expect(event).toMatchObject({ type: 'cohort.paused-v1', externalAccountNumber: '*' });
      expect(JSON.parse(event!.body!).data).toMatchObject({
        reason: 'operator',
        detail: 'cutover rehearsal review',
      });

      const resumed = await admin('plan', 'resume', SUPPLIER);
      expect(resumed.out).toMatchObject({ status: 'ACTIVE', pause: null, canary_approved: false });
      expect((await plan.get()).json().status).toBe('ACTIVE');
    },
  );
});
