import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { createTenant, graphqlToken, startTestApp, type TestApp } from '../support/app.js';
import { databaseUrl, uniqueName } from '../support/env.js';
import { redisKeys } from '../../src/infra/redis-keys.js';

const run = promisify(execFile);
// Every test starts the CLI as processes (each a TypeScript start-up of a few seconds on a loaded machine).
vi.setConfig({ testTimeout: 120_000 });
const cli = resolve(import.meta.dirname, '../../src/cli/admin/main.ts');
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ env: { TEST_LABEL: 'cli' } });
});
afterAll(async () => t.close());

async function admin(...args: string[]): Promise<{ code: number; out: any; err: string }> {
  return adminWith({}, ...args);
}

async function adminWith(
  extraEnv: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; out: any; err: string }> {
  const env = {
    ...process.env,
    MONGO_URL: t.config.MONGO_URL,
    JWT_SECRET: t.config.JWT_SECRET,
    API_KEY_HASH_SECRET: t.config.API_KEY_HASH_SECRET,
    LOG_LEVEL: 'silent',
    PAYMENT_VENDORS: '',
    ...extraEnv,
  };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], { env });
    return { code: 0, out: JSON.parse(stdout), err: stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, out: failure.stdout, err: failure.stderr };
  }
}

describe('import-admin', () => {
  it('creates an organisation with a working API key, and refuses a duplicate', async () => {
    const created = await admin('org', 'create', 'Iberia Power');
    expect(created.code).toBe(0);
    expect(created.out.organisation.name).toBe('Iberia Power');
    expect(created.out.api_key).toMatch(/^amk_[A-Za-z0-9_-]{43}$/);
    const token = await graphqlToken(t.app, { APIKey: created.out.api_key });
    expect(token.body.data?.obtainKrakenToken.token).toEqual(expect.any(String));

    const dup = await admin('org', 'create', 'Iberia Power');
    expect(dup.code).toBe(1);
    expect(dup.err.trim()).toBe('error: organisation "Iberia Power" already exists');
    expect(dup.err.trim().split('\n')).toHaveLength(1);
  });

  it('creates and revokes API keys by prefix, and reports unknown ones', async () => {
    await admin('org', 'create', 'Keys Org');
    const key = await admin('api-key', 'create', '--org', 'Keys Org');
    expect(key.code).toBe(0);
    expect(key.out.api_key.startsWith(key.out.prefix)).toBe(true);
    const revoked = await admin('api-key', 'revoke', key.out.prefix);
    expect(revoked.code).toBe(0);
    expect(revoked.out.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(
      (await graphqlToken(t.app, { APIKey: key.out.api_key })).body.errors?.[0]?.extensions?.errorCode,
    ).toBe('INVALID_API_KEY');
    expect((await admin('api-key', 'revoke', key.out.prefix)).err).toContain('already revoked');
    const unknown = await admin('api-key', 'revoke', 'amk_nothere');
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('does not exist');
    expect((await admin('api-key', 'create', '--org', 'Nobody')).err).toContain(
      'organisation "Nobody" does not exist',
    );
  });

  it('creates, shows and re-statuses suppliers, with errors for bad input', async () => {
    await admin('org', 'create', 'Supplier Org');
    const created = await admin(
      'supplier',
      'create',
      'SUP_1',
      '--org',
      'Supplier Org',
      '--document-root',
      'migrations/sup1',
      '--send-migration-email',
    );
    expect(created.code).toBe(0);
    expect(created.out).toEqual({
      code: 'SUP_1',
      organisation: 'Supplier Org',
      status: 'Ongoing',
      document_root: 'migrations/sup1',
      document_bucket: null,
      send_migration_email: true,
      region: 'ES',
      default_team: null,
    });
    const paused = await admin('supplier', 'set-status', 'SUP_1', 'Paused');
    expect(paused.out.status).toBe('Paused');
    expect((await admin('supplier', 'show', 'SUP_1')).out.status).toBe('Paused');

    const badStatus = await admin('supplier', 'set-status', 'SUP_1', 'Finished');
    expect(badStatus.code).toBe(1);
    expect(badStatus.err).toContain('must be one of Ongoing, Paused, Complete');
    const unknown = await admin('supplier', 'show', 'NOPE');
    expect(unknown.code).toBe(1);
    expect(unknown.err.trim()).toBe('error: supplier "NOPE" does not exist');
    expect((await admin('supplier', 'create', 'bad code', '--org', 'Supplier Org')).err).toContain(
      'must match',
    );
    expect((await admin('supplier', 'create', 'SUP_1', '--org', 'Supplier Org')).err).toContain(
      'already exists',
    );
    expect(
      (await admin('supplier', 'create', 'SUP_2', '--org', 'Supplier Org', '--status', 'Done')).code,
    ).not.toBe(0);
  });

  it('creates a supplier only with a region that has a validation profile', async () => {
    await admin('org', 'create', 'Region Org');
    const unknown = await admin('supplier', 'create', 'SUP_XX', '--org', 'Region Org', '--region', 'XX');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('Allowed choices are ES');
    expect(await t.app.db.models.ImportSupplier.countDocuments({ code: 'SUP_XX' })).toBe(0);
    // The operations behind the CLI (also used by the demo seed) refuse it too.
    await expect(t.ops.createSupplier('SUP_XX', 'Region Org', { region: 'es' })).rejects.toThrow(
      'region "es" must be one of ES',
    );
    const es = await admin('supplier', 'create', 'SUP_ES', '--org', 'Region Org', '--region', 'ES');
    expect(es.out.region).toBe('ES');
  });

  it('creates teams once', async () => {
    const team = await admin('team', 'create', 'Migrations Squad');
    expect(team.out).toEqual({ team: { id: expect.any(String), name: 'Migrations Squad' } });
    expect((await admin('team', 'create', 'Migrations Squad')).err).toContain('already exists');
  });

  it('sets an organisation’s weight in the creation limit’s fair share and shows it, refusing bad weights', async () => {
    const redis = {
      REDIS_URL: t.config.REDIS_URL,
      REDIS_CLUSTER_NODES: t.config.REDIS_CLUSTER_NODES.map(({ host, port }) => `${host}:${port}`).join(','),
      QUEUE_PREFIX: t.config.QUEUE_PREFIX,
    };
    await admin('org', 'create', 'Weighty Org');
    const set = await adminWith(redis, 'org', 'set-weight', 'Weighty Org', '3');
    expect(set.out).toMatchObject({ organisation: 'Weighty Org', weight: 3, applied_now: true });
    // Applied to the slots' shares at once (the scripts read it from Redis).
    const weights = await t.app.redis.hgetall(redisKeys(t.config.QUEUE_PREFIX).creationSlots.weights);
    expect(weights).toEqual({ [set.out.id]: '3' });
    const shown = await adminWith(redis, 'org', 'show', 'Weighty Org');
    expect(shown.out).toEqual({
      organisation: 'Weighty Org',
      id: set.out.id,
      weight: 3,
      creation: { fair_share: true, limit: 50, in_flight: 0, in_use: 0, share: 50, waiting: 0 },
    });
    for (const bad of ['0', '1.5', '1001', 'two']) {
      const refused = await adminWith(redis, 'org', 'set-weight', 'Weighty Org', bad);
      expect(refused.code).toBe(1);
      expect(refused.err.trim()).toBe(`error: weight "${bad}" must be a whole number from 1 to 1000`);
    }
    const unknown = await adminWith(redis, 'org', 'set-weight', 'Nobody', '2');
    expect(unknown.err.trim()).toBe('error: organisation "Nobody" does not exist');
  });

  it('marks an account import process skipped', async () => {
    await admin('org', 'create', 'Skip Org');
    await admin('supplier', 'create', 'SKIPPY', '--org', 'Skip Org');
    const skipped = await admin('account', 'skip', 'SKIPPY', 'EXT-1');
    expect(skipped.out).toEqual({
      import_supplier: 'SKIPPY',
      external_account_number: 'EXT-1',
      skipped: true,
    });
    const doc = await t.app.db.models.AccountImportProcess.findOne({
      importSupplier: 'SKIPPY',
      externalAccountNumber: 'EXT-1',
    });
    expect(doc?.skipped).toBe(true);
    expect((await admin('account', 'skip', 'NOPE', 'EXT-1')).err).toContain('supplier "NOPE" does not exist');
  });

  it('seeds the demo idempotently and prints a token command', async () => {
    const first = await admin('demo');
    const second = await admin('demo');
    expect(first.code).toBe(0);
    expect(second.out.api_key).not.toBe(first.out.api_key);
    expect(await t.app.db.models.ImportSupplier.countDocuments({ code: 'DEMO' })).toBe(1);
    expect(await t.app.db.models.OperationsTeam.countDocuments({ name: 'Migrations' })).toBe(1);
    expect(await t.app.db.models.Organisation.countDocuments({ name: 'Demo Energy' })).toBe(1);
    expect(second.out.get_token).toContain('obtainKrakenToken');
    // PAYMENT_VENDORS defaults to STRIPE, but no STRIPE_API_KEY is set here: no vendor is enabled.
    expect(first.out.payment_vendors).toEqual([]);
    expect(first.out.simulated_payment_references).toBeUndefined();
    const withSimulated = await adminWith({ PAYMENT_VENDORS: 'STRIPE,SIMULATED' }, 'demo');
    // STRIPE is listed but has no key: only SIMULATED is enabled.
    expect(withSimulated.out.payment_vendors).toEqual(['SIMULATED']);
    expect(withSimulated.out.simulated_payment_references).toContain('sim_ok');
    const token = await graphqlToken(t.app, { APIKey: first.out.api_key });
    expect(token.body.data?.obtainKrakenToken.token).toEqual(expect.any(String));
  });

  it('exits non-zero with usage help for an unknown command', async () => {
    const res = await admin('frobnicate');
    expect(res.code).not.toBe(0);
    expect(res.err).toContain("unknown command 'frobnicate'");
  });
});

describe('tenant isolation', () => {
  it("answers another organisation's supplier exactly like a supplier that does not exist", async () => {
    await createTenant(t, 'Tenant A', 'TENANT_A');
    const b = await createTenant(t, 'Tenant B', 'TENANT_B');
    for (const path of ['all', 'pending', 'imported']) {
      const foreign = await t.app.inject({
        url: `/v1/data-import/${path}-account-import-processes/TENANT_A/`,
        headers: b.headers,
      });
      const missing = await t.app.inject({
        url: `/v1/data-import/${path}-account-import-processes/NO_SUCH/`,
        headers: b.headers,
      });
      expect(foreign.statusCode).toBe(404);
      expect(foreign.json()).toEqual(missing.json());
      expect(foreign.json().code).toBe('import_supplier_not_found');
      const own = await t.app.inject({
        url: `/v1/data-import/${path}-account-import-processes/TENANT_B/`,
        headers: b.headers,
      });
      expect(own.statusCode).toBe(200);
      expect(own.json()).toEqual([]);
    }
    const foreignStatus = await t.app.inject({
      url: '/v1/data-import/account-transfer-status/TENANT_A/X1/',
      headers: b.headers,
    });
    const missingStatus = await t.app.inject({
      url: '/v1/data-import/account-transfer-status/NO_SUCH/X1/',
      headers: b.headers,
    });
    expect(foreignStatus.statusCode).toBe(404);
    expect(foreignStatus.json()).toEqual(missingStatus.json());
  });

  it('sets a supplier default team (at creation or later); the team must exist', async () => {
    await admin('org', 'create', 'Team Org');
    await admin('team', 'create', 'Backoffice');
    const created = await admin(
      'supplier',
      'create',
      'SUP_T',
      '--org',
      'Team Org',
      '--default-team',
      'Backoffice',
    );
    expect(created.out.default_team).toBe('Backoffice');
    await admin('team', 'create', 'Night Shift');
    const changed = await admin('supplier', 'set-default-team', 'SUP_T', 'Night Shift');
    expect(changed.code).toBe(0);
    expect(changed.out.default_team).toBe('Night Shift');
    const missing = await admin('supplier', 'set-default-team', 'SUP_T', 'Nobody');
    expect(missing.code).toBe(1);
    expect(missing.err.trim()).toBe('error: team "Nobody" does not exist');
    expect(
      (await admin('supplier', 'create', 'SUP_U', '--org', 'Team Org', '--default-team', 'Nobody')).code,
    ).toBe(1);
  });

  it('manages webhook endpoints: add (secret once), list (never the secret), deliveries, replay, remove', async () => {
    await admin('org', 'create', 'Hook Org');
    const env = { REDIS_URL: t.config.REDIS_URL, QUEUE_PREFIX: t.config.QUEUE_PREFIX };
    const refused = await adminWith(
      env,
      'webhook',
      'add',
      '--org',
      'Hook Org',
      '--url',
      'http://127.0.0.1:9/h',
    );
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('webhook URL refused');
    const dev = { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' };
    const added = await adminWith(
      dev,
      'webhook',
      'add',
      '--org',
      'Hook Org',
      '--url',
      'http://127.0.0.1:9/h',
      '--events',
      'data_import.import_process.complete-v1',
    );
    expect(added.code).toBe(0);
    expect(added.out).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      url: 'http://127.0.0.1:9/h',
      events: ['data_import.import_process.complete-v1'],
      active_from: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const listed = await adminWith(env, 'webhook', 'list', '--org', 'Hook Org');
    expect(listed.out).toEqual([
      {
        id: added.out.id,
        url: 'http://127.0.0.1:9/h',
        events: ['data_import.import_process.complete-v1'],
        created_at: expect.any(String),
        active_from: added.out.active_from,
      },
    ]);
    expect(
      (
        await adminWith(
          env,
          'webhook',
          'add',
          '--org',
          'Hook Org',
          '--url',
          'https://8.8.8.8/',
          '--events',
          'nope',
        )
      ).err,
    ).toContain('unknown event type');
    expect((await adminWith(env, 'webhook', 'deliveries', '--org', 'Hook Org', '--failed')).out).toEqual([]);
    expect(
      (await adminWith(env, 'webhook', 'replay', 'no-such-delivery', '--org', 'Hook Org')).err.trim(),
    ).toBe('error: delivery no-such-delivery does not exist');
    // remove and replay are scoped by --org: required, and another organisation's id does not exist for it.
    expect((await adminWith(env, 'webhook', 'remove', added.out.id)).code).toBe(2);
    await admin('org', 'create', 'Other Hook Org');
    const other = await adminWith(env, 'webhook', 'remove', added.out.id, '--org', 'Other Hook Org');
    expect(other.code).toBe(1);
    expect(other.err.trim()).toBe(`error: webhook ${added.out.id} does not exist`);
    expect((await adminWith(env, 'webhook', 'remove', added.out.id, '--org', 'Hook Org')).out).toEqual({
      id: added.out.id,
      removed: true,
    });
    expect((await adminWith(env, 'webhook', 'list', '--org', 'Hook Org')).out).toEqual([]);
    expect((await adminWith(env, 'webhook', 'remove', added.out.id, '--org', 'Hook Org')).code).toBe(1);
  });

  it('db init creates every collection and index on an empty database (on FerretDB the unique ones), and again changes nothing', async () => {
    const url = databaseUrl(inject('mongoUrl'), uniqueName('dbinit'));
    const conn = await mongoose.createConnection(url).asPromise();
    try {
      const first = await adminWith({ MONGO_URL: url }, 'db', 'init');
      expect(first.code, first.err).toBe(0);
      expect(first.out.database).toBe(conn.name);
      const collections = [...first.out.collections].sort();
      // Every model's collection, those without an index of their own (journal entries, e-mails, staged payloads)
      // included.
      expect(collections).toHaveLength(Object.keys(t.app.db.models).length + 1);
      expect(collections).toEqual(
        expect.arrayContaining(['ledger_journal', 'email_deliveries', 'staged_payloads', 'accounts']),
      );
      const listed = (await conn.db!.listCollections().toArray()).map((c) => c.name).sort();
      expect(listed).toEqual(collections);
      const indexes = async (collection: string) =>
        (await conn.db!.collection(collection).indexes()).map((i) => i.name).sort();
      const before = await indexes('accounts');
      expect(before).toEqual(
        ['_id_', 'number_1', 'importSupplier_1_externalAccountNumber_1', 'processId_1'].sort(),
      );
      // An index that is not unique serves reads on MongoDB; FerretDB reads from none but `_id`'s, so there it
      // would only cost writes, and is not made.
      const ferret = typeof (await conn.db!.admin().command({ buildInfo: 1 })).ferretdbVersion === 'string';
      expect(await indexes('webhook_deliveries')).toEqual(ferret ? ['_id_'] : ['_id_', 'organisationId_1']);
      expect(await indexes('webhook_outbox')).toEqual(ferret ? ['_id_'] : ['_id_', 'occurredAt_1']);
      // One an earlier version made is dropped there, and kept on MongoDB.
      if (ferret) await conn.db!.collection('webhook_outbox').createIndex({ occurredAt: 1 });
      const again = await adminWith({ MONGO_URL: url }, 'db', 'init');
      expect(again.code, again.err).toBe(0);
      expect([...again.out.collections].sort()).toEqual(collections);
      expect(await indexes('accounts')).toEqual(before);
      expect(await indexes('webhook_outbox')).toEqual(ferret ? ['_id_'] : ['_id_', 'occurredAt_1']);
    } finally {
      await conn.dropDatabase();
      await conn.close();
    }
  });
});
