import type { Queue } from 'bullmq';
import type { Config } from '../../config.js';
import type { Catalogue } from '../../vocabulary/catalogue.js';
import { deploymentCatalogue } from '../../domain/validation/deployment.js';
import type { RedisClient } from '../../infra/redis.js';
import type { JobData } from '../../jobs/catalog.js';
import type { Storage } from '../../storage/index.js';
import type { RecordedEvent } from '../../storage/processes/process-event-records.js';
import { relayEvents } from '../webhooks/relay.js';
import type { WebhookProcess } from '../webhooks/webhook-process.js';
import { AccountLocks } from './account-lock.js';
import type { VerifyOutcome } from './outcomes.js';

/** Where a post-import step reports what it could not do without failing the request. */
export type PostImportLog = { error(fields: object, message: string): void };

/** The request a post-import step serves: its id (carried by the relayed events), its raw body, its logger. */
export type PostImportRequest = { id: string; body: unknown; log: PostImportLog };

/** The payment verification queue: jobs run on a worker, the step waits for their outcome. */
export type VerificationQueue = {
  /** Removes the finished job with this id, so that adding the id again runs it again. */
  removeFinished(jobId: string): Promise<void>;
  /** Adds the verification (idempotent on its id) and waits at most `waitMs` for its outcome. */
  verify(
    data: JobData<'verify-payment-instruction'>,
    options: { jobId: string; waitMs: number },
  ): Promise<{ result: VerifyOutcome | undefined; timedOut: boolean }>;
};

/**
 * Everything a post-import step uses, built once per process by whoever runs steps (the API, a test, an
 * operator command): no step sees an HTTP request or a web framework. Its account locks are the process's
 * line of writers per account (see `AccountLocks`), so every step the process runs shares this one context.
 */
export type PostImportContext = {
  storage: Storage;
  locks: AccountLocks;
  clock: () => Date;
  /** The deployment's enumeration catalogue, for validating bodies. */
  catalogue: Catalogue;
  /** The bucket of a supplier's documents when the supplier names none. */
  documentBucket: string;
  /** How long a payment instruction request waits for its verification. */
  verificationWaitMs: number;
  /** Hands recorded events to the webhook queue (best effort: the outbox sweep catches up). */
  relay(events: readonly RecordedEvent[], requestId: string): Promise<void>;
  verifications: VerificationQueue;
};

export type PostImportDeps = {
  storage: Storage;
  redis: RedisClient;
  config: Config;
  clock: () => Date;
  /** The producer of the `webhooks` queue (looked up when events are relayed). */
  webhooks: () => Queue;
  /** The process's webhook sender: the relay dispatches an event with subscribers from here. */
  webhookProcess: WebhookProcess;
  verifications: VerificationQueue;
};

export function postImportContext(deps: PostImportDeps): PostImportContext {
  return {
    storage: deps.storage,
    locks: new AccountLocks(deps.redis, deps.config.QUEUE_PREFIX),
    clock: deps.clock,
    catalogue: deploymentCatalogue(deps.config),
    documentBucket: deps.config.DOCUMENT_BUCKET,
    verificationWaitMs: deps.config.PAYMENT_VERIFICATION_WAIT_MS,
    relay: (events, requestId) =>
      relayEvents(deps.webhooks(), events, requestId, {
        store: deps.storage.webhooks,
        dispatch: deps.webhookProcess,
      }),
    verifications: deps.verifications,
  };
}
