import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import {
  context,
  diag,
  DiagConsoleLogger,
  DiagLogLevel,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations, type Instrumentation } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { envDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  SamplingDecision,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import { BullMQOtel } from 'bullmq-otel';
import type { TracingConfig } from '../../config.js';
import { logTraceIds } from '../../logger.js';

/**
 * BullMQ's own polling, a trace per poll were it kept: a worker's wait for its next job, the stall check and
 * the lock renewals. Their spans (and the Redis calls under them) are not recorded when they start a trace.
 */
const QUEUE_LOOPS = /^(getNextJob|moveStalledJobsToWait|startStalledCheckTimer|extendLocks|rateLimit) /;

/** Probes and scrapes make no traces. */
const UNTRACED_PATHS = /^\/(healthz|readyz|metrics)(\/|\?|$)/;

/**
 * The OpenTelemetry SDK of one process, loaded only when tracing is on: spans exported over OTLP/HTTP in
 * batches, the W3C trace context across HTTP and (through bullmq-otel) across jobs, and the instrumentations
 * of the calls a trace follows. No span carries a header, a body or a database statement's values.
 */
export function startSdk(name: 'web' | 'worker' | 'client', config: TracingConfig) {
  diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.WARN);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  const exporterOptions = { url: config.url, timeoutMillis: config.batch.exportTimeoutMillis };
  const exporter =
    config.protocol === 'http/json'
      ? new JsonExporter(exporterOptions)
      : new ProtobufExporter(exporterOptions);
  const provider = new TracerProvider({
    resource: detectResources({ detectors: [envDetector] }).merge(
      resourceFromAttributes({
        'service.name': config.serviceName ?? `import-${name}`,
        'service.namespace': 'account-migration-import',
        'service.instance.id': `${hostname()}:${process.pid}`,
        'host.name': hostname(),
        'process.pid': process.pid,
      }),
    ),
    sampler: sampler(config),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...config.batch })],
  });
  trace.setGlobalTracerProvider(provider);

  registerInstrumentations({ instrumentations: instrumentations(name) });
  // The programs are ES modules, whose imports of CommonJS packages bypass the `require` hook the
  // instrumentations patch through: requiring them here first patches the one copy that every import gets.
  if (name !== 'client') for (const pkg of ['ioredis', 'mongodb']) createRequire(import.meta.url)(pkg);

  const noIds = {};
  logTraceIds(() => {
    const span = trace.getActiveSpan()?.spanContext();
    return span ? { trace_id: span.traceId, span_id: span.spanId } : noIds;
  });

  return {
    telemetry: new BullMQOtel({ tracerName: 'bullmq' }),
    detached: <T>(fn: () => T): T => context.with(ROOT_CONTEXT, fn),
    shutdown: () => provider.shutdown(),
  };
}

function sampler(config: TracingConfig): Sampler {
  const configured = configuredSampler(config);
  return {
    shouldSample: (ctx: Context, traceId, name, ...rest) =>
      !trace.getSpanContext(ctx) && QUEUE_LOOPS.test(name)
        ? { decision: SamplingDecision.NOT_RECORD }
        : configured.shouldSample(ctx, traceId, name, ...rest),
    toString: () => `WithoutQueueLoops{${configured.toString()}}`,
  };
}

function configuredSampler({ sampler: kind, samplerRatio }: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(samplerRatio);
  switch (kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * What each program traces. Redis and MongoDB spans only inside a trace (a job, a request), named by command:
 * a statement's keys and values can name an account, so none is recorded.
 */
function instrumentations(name: 'web' | 'worker' | 'client'): Instrumentation[] {
  if (name === 'client') return [new UndiciInstrumentation()];
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? ''),
      requireParentforOutgoingSpans: true,
    }),
    new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    new MongoDBInstrumentation({
      requireParentSpan: true,
      dbStatementSerializer: (command) => Object.keys(command)[0] ?? '',
    }),
  ];
}
