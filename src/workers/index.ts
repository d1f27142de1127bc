import { startTracing } from '../infra/telemetry/index.js';

/**
 * The `worker` process (main.ts). Tracing starts first when the OTEL_* variables turn it on: it instruments
 * http, ioredis and mongodb as they load, so the worker's own modules are imported after it.
 */
await startTracing('worker');
await import('./main.js');
