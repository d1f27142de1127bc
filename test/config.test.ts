import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, loadClientConfig, loadConfig } from '../src/config.js';

describe('config', () => {
  it('documents every variable in .env.example', () => {
    const example = readFileSync(resolve(import.meta.dirname, '../.env.example'), 'utf8');
    const documented = new Set([...example.matchAll(/^([A-Z0-9_]+)=/gm)].map((m) => m[1]));
    expect(Object.keys(configSchema.shape).filter((k) => !documented.has(k))).toEqual([]);
  });

  it('fails fast listing every invalid or missing variable', () => {
    expect(() => loadConfig({ PORT: 'abc', JWT_SECRET: 'short' })).toThrowErrorMatchingInlineSnapshot(`
      [Error: Invalid configuration:
        PORT: Invalid input: expected number, received NaN
        JWT_SECRET: must be at least 32 characters
        API_KEY_HASH_SECRET: Invalid input: expected string, received undefined]
    `);
  });

  it('parses a minimal environment with defaults', () => {
    const config = loadConfig({ JWT_SECRET: 'x'.repeat(32), API_KEY_HASH_SECRET: 'y'.repeat(32) });
    expect(config.ACCOUNT_CREATION_CONCURRENCY).toBe(50);
    expect(config.ACCOUNT_CREATION_WAIT_MS).toBe(60_000);
    expect(config.CATALOGUE_EXTRA).toEqual({});
    expect(config.PAYMENT_VENDORS).toEqual(['STRIPE']);
  });

  it('enables the payment vendors listed in PAYMENT_VENDORS, and only known ones', () => {
    const base = { JWT_SECRET: 'x'.repeat(32), API_KEY_HASH_SECRET: 'y'.repeat(32) };
    expect(loadConfig({ ...base, PAYMENT_VENDORS: ' simulated, STRIPE,SIMULATED ' }).PAYMENT_VENDORS).toEqual(
      ['SIMULATED', 'STRIPE'],
    );
    expect(() => loadConfig({ ...base, PAYMENT_VENDORS: 'STRIPE,ADYEN' })).toThrow(/PAYMENT_VENDORS/);
    expect(() => loadConfig({ ...base, PAYMENT_VENDORS: ',' })).toThrow(/PAYMENT_VENDORS/);
    // Vendors need adapters, so they are not an open catalogue a deployment extends.
    expect(() =>
      loadConfig({ ...base, CATALOGUE_EXTRA: '{"payment_instruction_vendor": ["ADYEN"]}' }),
    ).toThrow('CATALOGUE_EXTRA: payment vendors are enabled with PAYMENT_VENDORS');
  });
});

describe('client config', () => {
  it('defaults to the local service, trims trailing slashes, and treats an empty key as none', () => {
    expect(loadClientConfig({})).toEqual({ IMPORT_BASE_URL: 'http://127.0.0.1:3000' });
    expect(
      loadClientConfig({ IMPORT_BASE_URL: 'https://import.example.com//', IMPORT_API_KEY: 'k' }),
    ).toEqual({
      IMPORT_BASE_URL: 'https://import.example.com',
      IMPORT_API_KEY: 'k',
    });
    expect(loadClientConfig({ IMPORT_API_KEY: '' }).IMPORT_API_KEY).toBeUndefined();
  });
});
