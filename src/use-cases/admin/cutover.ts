import { Queue } from 'bullmq';
import type { RedisClient } from '../../infra/redis.js';
import { redisKeys } from '../../infra/redis-keys.js';
import type { Storage } from '../../storage/index.js';
import { PlanGate } from '../cutover/plan-gate.js';
import { describePlan, pausePlan, readPlan, resumePlan, type PlanDeps } from '../cutover/plan.js';
import { relayEvents } from '../webhooks/relay.js';
import { OperatorError } from './operations.js';

/**
 * The operators' part of the cohort plans (`import-admin plan show|pause|resume <CODE>`): the same use cases as
 * the v2 routes. A pause made here is published (`cohort.paused-v1`) through a dispatch job (this process makes
 * no delivery itself), or by the outbox sweep when Redis could not take the job.
 */
export class PlanOperations {
  private readonly deps: PlanDeps;
  /**
   * The webhooks queue, made when an event is to be published: a queue starts talking to Redis as it is made, and
   * a command that ends before it (a supplier that does not exist) would close the connection under that talk.
   */
  private queue: Queue | null = null;

  constructor(
    private readonly storage: Storage,
    redis: RedisClient,
    config: { QUEUE_PREFIX: string },
  ) {
    const webhooks = () => {
      this.queue ??= new Queue('webhooks', {
        connection: redis,
        prefix: redisKeys(config.QUEUE_PREFIX).queuePrefix('webhooks'),
      });
      return this.queue;
    };
    this.deps = {
      storage,
      gate: new PlanGate(redis, config.QUEUE_PREFIX),
      clock: () => new Date(),
      relay: (events, requestId) => relayEvents(webhooks(), events, requestId, { store: storage.webhooks }),
    };
  }

  private async supplier(code: string) {
    const supplier = await this.storage.suppliers.byCode(code);
    if (!supplier) throw new OperatorError(`supplier "${code}" does not exist`);
    return supplier;
  }

  private none(code: string): never {
    throw new OperatorError(`supplier "${code}" has no cohort plan`);
  }

  async show(code: string) {
    await this.supplier(code);
    const read = await readPlan(this.deps, code);
    return read ? describePlan(read.plan, read.state) : this.none(code);
  }

  async pause(code: string, reason = '') {
    if (reason.length > 200) throw new OperatorError('the reason is at most 200 characters');
    const supplier = await this.supplier(code);
    try {
      return (await pausePlan(this.deps, supplier, reason, 'import-admin')) ?? this.none(code);
    } finally {
      await this.queue?.close();
    }
  }

  async resume(code: string) {
    await this.supplier(code);
    try {
      return (await resumePlan(this.deps, code)) ?? this.none(code);
    } finally {
      await this.queue?.close();
    }
  }
}
