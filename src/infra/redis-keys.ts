/**
 * Every Redis key, channel and BullMQ prefix of the service, named in one place (nothing else writes a key
 * string). Keys that one script or transaction touches together share a `{hash tag}`, so that on a Redis
 * Cluster they live on one slot: each queue has a tag of its own (BullMQ's `prefix`), so queues spread over
 * the masters, and the keys that belong with a queue (creation slots, webhook fleet state) take its tag. On a
 * single Redis a tag is only part of the name.
 */
export type RedisKeys = ReturnType<typeof redisKeys>;

export function redisKeys(prefix: string) {
  const tag = (group: string) => `{${prefix}:${group}}`;
  const creation = tag('account-creation');
  const webhooks = tag('webhooks');
  return {
    /** BullMQ's `prefix` for a queue: its keys are `{<prefix>:<queue>}:<queue>:…`, one slot per queue. */
    queuePrefix: (queue: string) => tag(queue),
    /** A BullMQ job's lock key (tests take it away from a holder). */
    jobLock: (queue: string, jobId: string) => `${tag(queue)}:${queue}:${jobId}:lock`,
    /** The creation limit's keys, used together by its scripts. */
    creationSlots: {
      slots: `${creation}:slots`,
      peak: `${creation}:peak`,
      attempts: `${creation}:attempts`,
      done: `${creation}:done`,
      /** The fair share per organisation (see `use-cases/creation/slot-scripts.ts`). */
      slotOrg: `${creation}:slot-org`,
      orgUse: `${creation}:org-use`,
      weights: `${creation}:weights`,
      waiting: `${creation}:waiting`,
      orgWaiting: `${creation}:org-waiting`,
      orgParked: `${creation}:org-parked`,
      hold: `${creation}:hold`,
      parked: (organisationId: string) => `${creation}:parked:${organisationId}`,
      /** How many v2 tasks the organisation scheduled lately: its next task's rank (`TASK_PRIORITY`). */
      taskRank: (organisationId: string) => `${creation}:task-rank:${organisationId}`,
    },
    /** A per-account mutex (one key per script call: any slot). */
    accountLock: (accountId: string) => `${prefix}:account-lock:${accountId}`,
    /** What the worker fleet shares about webhook deliveries; counters and undelivered change together. */
    webhooks: {
      inFlight: (endpointId: string) => `${webhooks}:in-flight:${endpointId}`,
      counters: `${webhooks}:deliveries`,
      undelivered: `${webhooks}:undelivered`,
    },
    /** A supplier's cohort progress counters (`storage/progress-counters.ts`): one tag per supplier. */
    progress: (supplier: string) => `{${prefix}:progress:${supplier}}`,
    /**
     * A supplier's cohort plan state (`use-cases/cutover/plan-scripts.ts`): its hash (settings, pause, counts),
     * the set of its creations admitted and not finished, and its last finished outcomes (the breaker's window).
     * One tag per supplier: every plan script touches the three together.
     */
    plan: (supplier: string) => {
      const base = `{${prefix}:plan:${supplier}}`;
      return { state: `${base}:state`, inFlight: `${base}:in-flight`, recent: `${base}:recent` };
    },
    /** Progress counter updates that failed, fleet-wide (each process adds its own once Redis answers). */
    progressFailures: () => `${prefix}:progress-failures`,
    /** The pub/sub channel of early job results (a cluster forwards a publish to every node). */
    jobResults: `${prefix}:job-results`,
  };
}
