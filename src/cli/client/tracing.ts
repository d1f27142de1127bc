import { startTracing, stopTracing } from '../../infra/telemetry/index.js';
import { UsageError } from './http.js';

/**
 * import-client's traces, when the OTEL_* variables turn tracing on (docs/tracing.md): each request the client
 * sends is a span (undici's own instrumentation, through its diagnostics channels, so http.ts is unchanged), and
 * its trace context goes with the request, so the service's spans and the worker's job join that trace. Off, no
 * OpenTelemetry module is loaded.
 */
export async function startClientTracing(): Promise<void> {
  try {
    await startTracing('client');
  } catch (err) {
    // An OTEL_* variable the client cannot use: a usage error (exit 2), its message naming the variable.
    throw new UsageError((err as Error).message.replace(/\s*\n\s*/g, ' '));
  }
}

/** Exports what is left (bounded by OTEL_BSP_EXPORT_TIMEOUT) before the client exits. */
export async function stopClientTracing(): Promise<void> {
  await stopTracing();
}
