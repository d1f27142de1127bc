import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';

/** A database URL with a database of its own, so test files never see each other's data. */
export function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  if (url.hostname === 'localhost') url.hostname = '127.0.0.1';
  return url.toString();
}

export function uniqueName(label: string): string {
  return `${label.replace(/[^a-z0-9]/gi, '').slice(0, 20)}_${randomBytes(4).toString('hex')}`;
}

/** The config a test runs with: real services from the global setup, a unique database and queue prefix. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const name = uniqueName(overrides.TEST_LABEL ?? 't');
  return loadConfig({
    MONGO_URL: databaseUrl(inject('mongoUrl'), name),
    REDIS_URL: inject('redisUrl'),
    REDIS_CLUSTER_NODES: inject('redisClusterNodes'),
    QUEUE_PREFIX: name,
    JWT_SECRET: 'test-jwt-secret-0123456789-abcdefghijklmnop',
    API_KEY_HASH_SECRET: 'test-hash-secret-0123456789-abcdefghijklmnop',
    // TEST_LOG_LEVEL=error (say) shows what a test's API and workers log, e.g. the cause of a 500.
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    OPERATOR_PASSWORD: 'operator-password-for-tests',
    // Tests change statuses and revoke keys and look at once; the cache has its own test.
    AUTH_CACHE_TTL_MS: '0',
    // Endpoints receive events at once (and writers read them for every event); activation.test.ts sets one.
    WEBHOOK_ACTIVATION_DELAY_MS: '0',
    // Off by default in a deployment; the tests use the simulated vendor.
    PAYMENT_VENDORS: 'STRIPE,SIMULATED',
    ...(inject('mongoMaxPoolSize') ? { MONGO_MAX_POOL_SIZE: inject('mongoMaxPoolSize') } : {}),
    ...Object.fromEntries(Object.entries(overrides).filter(([k]) => k !== 'TEST_LABEL')),
  });
}
