import type { RedisClient } from '../../infra/redis.js';
import type { Storage } from '../../storage/index.js';
import { CreationSlots, type SlotSettings } from '../creation/slots.js';
import { OperatorError } from './operations.js';

/** The highest weight an organisation can have in the creation limit's fair share. */
export const MAX_WEIGHT = 1_000;

/**
 * The operators' part of the creation limit's fair share (`import-admin org set-weight` / `org show`). The weight
 * is kept in the database (the truth) and written to Redis at once; every worker process also mirrors the
 * database into Redis every 5 s, so a weight set while Redis was unreachable still takes effect, within 5 s.
 */
export class FairShareOperations {
  private readonly slots: CreationSlots;

  constructor(
    private readonly storage: Storage,
    redis: RedisClient,
    settings: SlotSettings,
  ) {
    this.slots = new CreationSlots(redis, settings);
  }

  async setWeight(name: string, value: string) {
    const weight = Number(value);
    if (!/^\d+$/.test(value) || weight < 1 || weight > MAX_WEIGHT)
      throw new OperatorError(`weight "${value}" must be a whole number from 1 to ${MAX_WEIGHT}`);
    const org = await this.storage.organisations.setWeight(name, weight);
    if (!org) throw new OperatorError(`organisation "${name}" does not exist`);
    let applied = true;
    try {
      await this.slots.setWeights(await this.storage.organisations.weights());
    } catch {
      // silent-ok: Redis unreachable is said in the answer (`applied_now`); the workers' mirror applies it within 5 s
      applied = false;
    }
    return { organisation: name, id: String(org._id), weight, applied_now: applied };
  }

  async show(name: string) {
    const org = await this.storage.organisations.findWithWeight(name);
    if (!org) throw new OperatorError(`organisation "${name}" does not exist`);
    const use = await this.slots.usage(String(org._id));
    return {
      organisation: org.name,
      id: String(org._id),
      weight: org.creationWeight,
      creation: {
        fair_share: this.slots.fair,
        limit: this.slots.limit,
        in_flight: use.inFlight,
        in_use: use.inUse,
        share: Math.round(use.share * 100) / 100,
        waiting: use.waiting,
      },
    };
  }
}
