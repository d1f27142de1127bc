import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTracingConfig, tracingConfigSchema } from '../../src/config.js';

describe('tracing configuration (OTEL_*)', () => {
  it('is off by default, and on with OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint', () => {
    expect(loadTracingConfig({}).enabled).toBe(false);
    expect(
      loadTracingConfig({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).enabled,
    ).toBe(false);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({
      enabled: true,
      url: 'http://localhost:4318/v1/traces',
      protocol: 'http/protobuf',
    });
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toMatchObject({
      enabled: true,
      url: 'http://collector:4318/v1/traces',
    });
    expect(
      loadTracingConfig({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }),
    ).toMatchObject({ enabled: true, url: 'http://collector:4318/custom', protocol: 'http/json' });
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win; empty variables are unset', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(loadTracingConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(loadTracingConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(
      false,
    );
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: '' }).enabled).toBe(
      false,
    );
  });

  it('refuses what it cannot do, naming the variable', () => {
    expect(() => loadTracingConfig({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(
      /OTEL_TRACES_EXPORTER: only otlp/,
    );
    expect(() => loadTracingConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL: only OTLP over HTTP/,
    );
    expect(() => loadTracingConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
  });

  it('documents every variable in .env.example', () => {
    const example = readFileSync(resolve(import.meta.dirname, '../../.env.example'), 'utf8');
    const documented = new Set([...example.matchAll(/^([A-Z0-9_]+)=/gm)].map((m) => m[1]));
    const shape = tracingConfigSchema.in.shape;
    expect(Object.keys(shape).filter((k) => !documented.has(k))).toEqual([]);
    // As written there, tracing stays off.
    const values = Object.fromEntries(
      [...example.matchAll(/^(OTEL_[A-Z_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]),
    );
    expect(loadTracingConfig(values).enabled).toBe(false);
  });
});
