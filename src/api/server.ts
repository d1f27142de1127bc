import { startTracing } from '../infra/telemetry/index.js';

/**
 * The `web` process (main.ts). Tracing starts first when the OTEL_* variables turn it on: it instruments http,
 * ioredis and mongodb as they load, so the web's own modules are imported after it.
 */
await startTracing('web');
await import('./main.js');
