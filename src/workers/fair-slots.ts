import { Job } from 'bullmq';
import { CreationSlots } from '../use-cases/creation/slots.js';
import { fillFreeSlots, handOnSlot, type Promote } from '../use-cases/creation/fair-dispatch.js';
import type { WorkerContext } from './context.js';

/** How often a worker process fills free creation slots with parked tasks (lapses, lost hand-overs). */
const SWEEP_MS = 1_000;
/** How often a worker process mirrors the organisations' weights into Redis (`org set-weight` promises 5 s). */
const WEIGHTS_MS = 2_000;

type Context = Pick<WorkerContext, 'config' | 'redis' | 'queue' | 'log' | 'storage'>;

/** Promotes a parked task's job on the creation queue (false: it is not delayed any more, or gone). */
export function promoteCreationJob(ctx: Pick<Context, 'queue'>): Promote {
  return async (id) => {
    const job = await Job.fromId(ctx.queue('account-creation'), id);
    if (!job) return false;
    // silent-ok: a job that is not delayed (awake on its own, finished, removed) is not promoted; the next is
    return job.promote().then(
      () => true,
      () => false,
    );
  };
}

/** A freed slot goes to the next parked task (when `parked` organisations have some). */
export function handOn(ctx: Context, parked: number): void {
  if (parked <= 0) return;
  const slots = new CreationSlots(ctx.redis, ctx.config);
  handOnSlot(slots, promoteCreationJob(ctx)).catch((err: Error) =>
    ctx.log.warn({ err: err.message }, 'could not hand a creation slot on'),
  );
}

/**
 * The creation queue's periodic part in every worker process: free slots filled with parked tasks, and the
 * weights of the fair share mirrored from the database (so a weight set takes effect within 5 s, and one lost
 * with Redis comes back). Returns what stops it.
 */
export function startFairDispatch(ctx: Context): () => void {
  const slots = new CreationSlots(ctx.redis, ctx.config);
  const promote = promoteCreationJob(ctx);
  const sweep = setInterval(() => {
    fillFreeSlots(slots, promote).catch((err: Error) =>
      ctx.log.warn({ err: err.message }, 'could not fill free creation slots'),
    );
  }, SWEEP_MS);
  const mirror = () =>
    ctx.storage.organisations
      .weights()
      .then((weights) => slots.setWeights(weights))
      .catch((err: Error) =>
        ctx.log.warn({ err: err.message }, 'could not mirror the organisations’ weights'),
      );
  void mirror();
  const weights = setInterval(() => void mirror(), WEIGHTS_MS);
  sweep.unref();
  weights.unref();
  return () => {
    clearInterval(sweep);
    clearInterval(weights);
  };
}
