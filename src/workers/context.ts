import type { Logger } from 'pino';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../infra/redis.js';
import type { Config } from '../config.js';
import type { Storage } from '../storage/index.js';
import type { QueueName } from '../jobs/catalog.js';
import type { WebhookProcess } from '../use-cases/webhooks/webhook-process.js';
import type { PaymentVendor } from '../infra/vendors/types.js';

/** What every processor gets: config, the storage object, a logger and producers for follow-up jobs. */
export type WorkerContext = {
  config: Config;
  storage: Storage;
  log: Logger;
  queue: (name: QueueName) => Queue;
  /** The process's producer connection (fails fast while Redis is down), e.g. for creation slots. */
  redis: RedisClient;
  /**
   * The worker's own connection, on which BullMQ completes the job: a command sent here before the
   * processor returns reaches Redis before the job's completion does, without waiting for its reply.
   */
  jobRedis: RedisClient;
  clock: () => Date;
  /** What this process keeps for the webhooks it sends (fleet state, endpoint places, first attempts). */
  webhooks: WebhookProcess;
  /** The payment vendors this process enables (PAYMENT_VENDORS), built once at its boot. */
  vendors: ReadonlyMap<string, PaymentVendor>;
};
