import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { RedisClient } from '../../infra/redis.js';
import { DirectDeliveries } from './direct-deliveries.js';
import { endpointPlaces, type EndpointPlaces } from './endpoint-places.js';
import { WebhookFleetState } from './fleet-state.js';

/**
 * What one process (the API, a worker process) keeps for the webhooks it sends: the fleet's state in Redis
 * with the outcome counts it has gathered, its line for endpoints' places, and the first attempts it has in
 * flight. Built once at the process's boot and handed to whatever sends from it (its delivery jobs, its relay):
 * two built over one Redis client are two processes' (two lines, two tallies).
 */
export type WebhookProcess = {
  fleet: WebhookFleetState;
  places: EndpointPlaces;
  direct: DirectDeliveries;
  /** The process's clock (the time a delivery is written at). */
  clock: () => Date;
  /**
   * On shutdown: waits for the first attempts in flight (each bounded by `directAttemptMs` and its writes), then
   * adds the outcome counts the process gathered and gives back the endpoints' places it keeps idle (its
   * delivery jobs' too).
   */
  drain(): Promise<void>;
};

export type WebhookProcessDeps = {
  config: Config;
  log: Pick<Logger, 'info' | 'warn'>;
  /** The process's producer connection. */
  redis: RedisClient;
  clock: () => Date;
};

export function createWebhookProcess(deps: WebhookProcessDeps): WebhookProcess {
  const { config, log, redis, clock } = deps;
  const fleet = new WebhookFleetState(redis, config.QUEUE_PREFIX);
  const places = endpointPlaces(fleet, config);
  const direct = new DirectDeliveries({ config, log, clock, fleet, places });
  return {
    fleet,
    places,
    direct,
    clock,
    async drain() {
      await direct.drain();
      await fleet.flushCounts();
      await places.releaseIdle();
    },
  };
}
