import type { Telemetry } from 'bullmq';
import { loadTracingConfig } from '../../config.js';

/**
 * Tracing's switch, the one module of it that every process loads. Off (the default), it loads nothing of
 * OpenTelemetry and costs nothing per request or job: the SDK (./sdk.ts) is imported only when the OTEL_*
 * variables turn tracing on (src/config.ts, docs/tracing.md).
 */

export type ProcessName = 'web' | 'worker' | 'client';

type Running = {
  telemetry: Telemetry;
  detached: <T>(fn: () => T) => T;
  shutdown: () => Promise<void>;
};

let running: Running | undefined;

/**
 * Starts tracing for this process when the environment asks for it. A program calls it first, before it loads
 * the modules tracing instruments (http, ioredis, mongodb): the web and the worker import their own code after
 * it. Returns whether tracing is on.
 */
export async function startTracing(
  name: ProcessName,
  env?: Record<string, string | undefined>,
): Promise<boolean> {
  // Without `env`, the config module reads the process's environment.
  const config = loadTracingConfig(env);
  if (!config.enabled || running) return running !== undefined;
  const { startSdk } = await import('./sdk.js');
  running = startSdk(name, config);
  return true;
}

/** Sends the spans not yet exported and stops tracing (a no-op when it is off); bounded by the export timeout. */
export async function stopTracing(): Promise<void> {
  const stopping = running;
  running = undefined;
  await stopping?.shutdown();
}

/** BullMQ's telemetry option for a Queue or Worker: its spans, and the trace context carried by every job. */
export function queueTelemetry(): { telemetry?: Telemetry } {
  return running ? { telemetry: running.telemetry } : {};
}

/**
 * Runs `fn` outside the trace of whatever request or job is running: for what starts a long-lived loop (a
 * QueueEvents' reader) on first use, which would otherwise add its every Redis call to that first trace.
 */
export function detached<T>(fn: () => T): T {
  return running ? running.detached(fn) : fn();
}
