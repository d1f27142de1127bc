import type { Logger } from 'pino';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../infra/redis.js';
import type { Config } from '../config.js';
import type { Database } from '../infra/mongo.js';
import type { QueueName } from './catalog.js';

/** What every processor gets: config, the database, a logger and producers for follow-up jobs. */
export type WorkerContext = {
  config: Config;
  db: Database;
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
};
