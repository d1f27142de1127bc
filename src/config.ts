import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { paymentVendorNames } from './vocabulary/payment-vendors.js';

const bool = z.enum(['true', 'false', '1', '0', '']).transform((v) => v === 'true' || v === '1');

const secret = z.string().min(32, 'must be at least 32 characters');

/** Every setting of the service, parsed once. API, workers, CLI and tests all build it through here. */
export const configSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  MONGO_URL: z.string().min(1).default('mongodb://127.0.0.1:27017/account_migration'),
  /**
   * How long a database operation waits for a reachable server before failing (the driver's
   * serverSelectionTimeoutMS): while the database is down, requests answer 503 after at most this long.
   */
  MONGO_SERVER_SELECTION_TIMEOUT_MS: z.coerce.number().int().min(100).default(2_000),
  /**
   * Database connections (so commands in flight) per process. With FerretDB over PostgreSQL keep it below the
   * FerretDB's `pool_max_conns`: a stock FerretDB v1 update (and the project's build's `findAndModify`) holds a
   * PostgreSQL connection while it waits for a second one, so as many in flight as pool connections deadlock it.
   * Checked at start against what the project's FerretDB build reports (src/infra/database-server.ts).
   */
  MONGO_MAX_POOL_SIZE: z.coerce.number().int().min(2).max(500).default(50),
  /**
   * The bound of every database command, client-side (FerretDB ignores maxTimeMS on writes, and the driver's
   * timeoutMS does nothing in 7.x): how long it waits for a pooled connection, then for its answer (the driver's
   * waitQueueTimeoutMS and socketTimeoutMS). Past it the command fails as an unavailable database: 503.
   */
  MONGO_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  /**
   * Seeds of a Redis Cluster, `host:port` separated by commas: every Redis connection of the service becomes a
   * cluster client and `REDIS_URL` is not used. Empty (the default): the single Redis at `REDIS_URL`.
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .default('')
    .transform((value, ctx) =>
      value
        .split(',')
        .map((seed) => seed.trim())
        .filter((seed) => seed !== '')
        .map((seed) => {
          const match = /^([^\s:]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(seed);
          if (!match || Number(match[2]) > 65535) {
            ctx.addIssue({ code: 'custom', message: `"${seed}" is not host:port` });
            return { host: '', port: 0 };
          }
          return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
        }),
    ),
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('import'),
  JWT_SECRET: secret,
  API_KEY_HASH_SECRET: secret,
  /** How long a worker may reuse an API key's liveness and a supplier's settings before reading them again. */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(1_000),
  TOKEN_TTL_SECONDS: z.coerce.number().int().positive().default(3600),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(7 * 24 * 3600),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024),
  ACCOUNT_CREATION_CONCURRENCY: z.coerce.number().int().min(0).default(50),
  ACCOUNT_CREATION_WAIT_MS: z.coerce.number().int().positive().default(60_000),
  /** How long a creation slot lives without a heartbeat: a crashed holder's slot frees itself after this. */
  ACCOUNT_CREATION_SLOT_LEASE_MS: z.coerce.number().int().min(1_000).default(15_000),
  /**
   * The limit shared fairly among the organisations with work (by weight, `import-admin org set-weight`); off:
   * first come, first served under the global limit only.
   */
  ACCOUNT_CREATION_FAIR_SHARE: bool.default(true),
  /** How long a v1 create under its organisation's share waits for a slot that others hold before its 429. */
  ACCOUNT_CREATION_FAIR_WAIT_MS: z.coerce.number().int().min(0).default(5_000),
  PAYMENT_VERIFICATION_WAIT_MS: z.coerce.number().int().positive().default(30_000),
  PAYMENT_VENDOR_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  WORKER_CONCURRENCY: z.coerce.number().int().positive().default(50),
  /** BullMQ job lock: a killed worker's job is picked up again once its lock expires and a stall check runs. */
  WORKER_LOCK_DURATION_MS: z.coerce.number().int().min(500).default(30_000),
  WORKER_STALLED_INTERVAL_MS: z.coerce.number().int().min(200).default(30_000),
  /** Stalls (worker crashes) a job survives before it fails; every processor is idempotent. */
  WORKER_MAX_STALLED_COUNT: z.coerce.number().int().min(0).default(3),
  OPERATOR_USERNAME: z.string().min(1).default('operator'),
  OPERATOR_PASSWORD: z.string().min(12).optional(),
  DOCUMENT_BUCKET: z.string().min(1).default('migration-documents'),
  SMTP_URL: z.string().url().optional(),
  MAIL_FROM: z.string().default('migrations@example.invalid'),
  /**
   * The payment vendors clients may name, as a comma list. SIMULATED (a stand-in that accepts references by
   * prefix) is for demos and tests only, so it is never on unless listed.
   */
  PAYMENT_VENDORS: z
    .string()
    .default('STRIPE')
    .transform((raw) => [...new Set(raw.split(',').map((v) => v.trim().toUpperCase()))].filter(Boolean))
    .pipe(z.array(z.enum(paymentVendorNames)).min(1)),
  STRIPE_API_KEY: z.string().optional(),
  STRIPE_API_BASE: z.string().url().optional(),
  CATALOGUE_EXTRA: z
    .string()
    .default('{}')
    .transform((raw, ctx) => {
      let extra: Record<string, string[]>;
      try {
        extra = z.record(z.string(), z.array(z.string())).parse(JSON.parse(raw));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object of string arrays' });
        return z.NEVER;
      }
      // A vendor is usable only with an adapter: the list is PAYMENT_VENDORS, not an open catalogue.
      if ('payment_instruction_vendor' in extra) {
        ctx.addIssue({ code: 'custom', message: 'payment vendors are enabled with PAYMENT_VENDORS' });
        return z.NEVER;
      }
      return extra;
    }),
  /**
   * The key (base64 of 32 bytes) that encrypts webhook signing secrets in the database. Unset: derived from
   * API_KEY_HASH_SECRET. Changing it makes the stored secrets unreadable (add the endpoints again).
   */
  WEBHOOK_SECRET_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of 32 bytes')
    .optional(),
  /** A webhook delivery answered 2xx within this long counts as delivered; anything else is retried. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** The waits between a webhook's attempts (one more attempt than delays); then it is failed (replayable). */
  WEBHOOK_RETRY_DELAYS_MS: z
    .string()
    .default('5000,300000,1800000,7200000,18000000,36000000,36000000')
    .transform((raw) => raw.split(',').map((v) => Number(v.trim())))
    .pipe(z.array(z.number().int().min(0)).min(0).max(50)),
  /** Allows webhook URLs that are http:// or resolve to loopback/private/link-local addresses (dev and tests). */
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  /**
   * How long after `webhook add` an endpoint starts receiving events. Event writers remember an organisation's
   * endpoints for half of it (0: read them for every event), so none is missed whatever the writer remembered;
   * the pods' clocks must agree within half of it.
   */
  WEBHOOK_ACTIVATION_DELAY_MS: z.coerce.number().int().min(0).max(3_600_000).default(10_000),
  /** Deliveries in flight per endpoint across the worker fleet: a slow endpoint never takes every worker slot. */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).default(4),
  /** How often the outbox is swept for events whose dispatch job was never queued. */
  OUTBOX_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  /**
   * How often each worker process checks that every supplier's progress counts are settled (built by the Redis
   * server that holds them, none marked stale) and rebuilds from the database those that are not.
   */
  PROGRESS_CHECK_INTERVAL_MS: z.coerce.number().int().min(100).default(5_000),
  /**
   * Cohort plans (issue 47): how often a v2 task held back by its supplier's plan (paused, its canary's accounts
   * being created, outside the plan's window) looks again, and how often each worker process projects the
   * plans with a window (publishing `cohort.at_risk-v1` when a projection passes the window's end).
   */
  COHORT_PLAN_CHECK_INTERVAL_MS: z.coerce.number().int().min(100).default(2_000),
  METRICS_ENABLED: bool.default(true),
  /**
   * Most worker threads that parse, validate and serialise validate-account bodies off the event loop; 0
   * validates on the event loop. Default: the CPUs the process may use (container limits included); the
   * event loop mostly waits on I/O, so validation is what needs them.
   */
  VALIDATION_THREADS: z.coerce
    .number()
    .int()
    .min(0)
    .max(256)
    .default(() => availableParallelism()),
});

export type Config = z.infer<typeof configSchema>;

/** Parses the environment (or an override map, for tests) and fails fast with every problem listed. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  return parseEnv(configSchema, env);
}

/** The settings of the migration client (`import-client`): where the service is, and the organisation's key. */
export const clientConfigSchema = z.object({
  IMPORT_BASE_URL: z
    .string()
    .default('http://127.0.0.1:3000')
    .transform((url) => url.replace(/\/+$/, '')),
  /** Never a flag, so it stays out of shell history; the commands that call the service require it. */
  IMPORT_API_KEY: z.string().optional(),
});

export type ClientConfig = z.infer<typeof clientConfigSchema>;

export function loadClientConfig(env: Record<string, string | undefined> = process.env): ClientConfig {
  return parseEnv(clientConfigSchema, env);
}

const otlpProtocol = z.enum(['http/protobuf', 'http/json'], {
  message: 'only OTLP over HTTP is exported: http/protobuf or http/json',
});

/**
 * Tracing (docs/tracing.md), from the standard OpenTelemetry variables: on when OTEL_TRACES_EXPORTER=otlp or an
 * OTLP endpoint is set, off otherwise (the default) and whenever OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none. Web, workers and import-client read it; each names itself unless OTEL_SERVICE_NAME
 * does.
 */
export const tracingConfigSchema = z
  .object({
    OTEL_SDK_DISABLED: bool.default(false),
    OTEL_TRACES_EXPORTER: z
      .enum(['otlp', 'none'], { message: 'only otlp (or none) is supported' })
      .optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.default('http/protobuf'),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.optional(),
    OTEL_SERVICE_NAME: z.string().min(1).optional(),
    OTEL_TRACES_SAMPLER: z
      .enum([
        'always_on',
        'always_off',
        'traceidratio',
        'parentbased_always_on',
        'parentbased_always_off',
        'parentbased_traceidratio',
      ])
      .default('parentbased_always_on'),
    OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
    OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(0).default(5_000),
    OTEL_BSP_EXPORT_TIMEOUT: z.coerce.number().int().min(1).default(30_000),
    OTEL_BSP_MAX_QUEUE_SIZE: z.coerce.number().int().min(1).default(2_048),
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: z.coerce.number().int().min(1).default(512),
  })
  .transform((env) => {
    const base = (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318').replace(/\/+$/, '');
    const asked =
      env.OTEL_TRACES_EXPORTER === 'otlp' ||
      (env.OTEL_TRACES_EXPORTER === undefined &&
        (env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
          env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined));
    return {
      enabled: asked && !env.OTEL_SDK_DISABLED,
      serviceName: env.OTEL_SERVICE_NAME,
      url: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${base}/v1/traces`,
      protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL,
      sampler: env.OTEL_TRACES_SAMPLER,
      samplerRatio: env.OTEL_TRACES_SAMPLER_ARG,
      batch: {
        scheduledDelayMillis: env.OTEL_BSP_SCHEDULE_DELAY,
        exportTimeoutMillis: env.OTEL_BSP_EXPORT_TIMEOUT,
        maxQueueSize: env.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: Math.min(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, env.OTEL_BSP_MAX_QUEUE_SIZE),
      },
    };
  });

export type TracingConfig = z.infer<typeof tracingConfigSchema>;

export function loadTracingConfig(env: Record<string, string | undefined> = process.env): TracingConfig {
  return parseEnv(tracingConfigSchema, env);
}

/** Unset and empty variables alike take their defaults. */
function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n');
    throw new Error(`Invalid configuration:\n${lines}`);
  }
  return parsed.data;
}
