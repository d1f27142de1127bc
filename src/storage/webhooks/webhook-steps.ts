import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { deliveryStepId, type WebhookDeliveryStep } from '../models/webhook-delivery.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * A delivery's history, kept so that two runs of its job at once (BullMQ runs a stalled job again while its
 * first run may go on) can neither write a state over a newer one nor both decide one step. FerretDB v1 has
 * no atomic conditional update ("pending → delivered if still at attempt 2" can lose to another writer between
 * its read and its write) and no multi-document transaction; an insert of a given `_id` is atomic. So every
 * change of a delivery's state is a step inserted under a deterministic id (`deliveryStepId`: the series, one
 * per replay, and the step within it): only one run inserts step k + 1, and a run that finds it there learns
 * that another run's outcome stands. A pending step is followed by the next step of its series; a settled one
 * (delivered, failed) only by the start of the next series (a replay, which is refused while pending).
 *
 * The delivery record holds step 0 as inserted and then a copy of a later step (`copySteps`), for the readers
 * that read records alone: the copy can be behind (a crash between the step and its copy, or a paused writer's
 * copy landing after a newer one's), never ahead, and whoever writes a copy looks for a newer step right after,
 * so it ends at the latest. Readers that decide (the delivery job, a replay, the sweep, the listing) start
 * from the copy and read on (`latestStep`), one read by `_id` per step, usually one that finds nothing.
 */

/** A delivery's state at one step of its history. */
export type DeliveryState = {
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastHttpStatus: number | null;
  nextAttemptAt: Date | null;
  /** The series (replays so far) and the step within it. */
  series: number;
  step: number;
};

/** What a delivery record holds of its state (records written before steps have no `step`: 0). */
export type RecordedState = {
  status: string;
  attempts: number;
  lastHttpStatus?: number | null;
  nextAttemptAt?: Date | null;
  replays?: number | null;
  step?: number | null;
};

/** A delivery record's fields `stateOfRecord` reads. */
export const recordedStateFields = {
  status: 1,
  attempts: 1,
  lastHttpStatus: 1,
  nextAttemptAt: 1,
  replays: 1,
  step: 1,
} as const;

export const stateOfRecord = (r: RecordedState): DeliveryState => ({
  status: r.status as DeliveryState['status'],
  attempts: r.attempts,
  lastHttpStatus: r.lastHttpStatus ?? null,
  nextAttemptAt: r.nextAttemptAt ?? null,
  series: r.replays ?? 0,
  step: r.step ?? 0,
});

const stateOfStep = (s: WebhookDeliveryStep): DeliveryState => ({
  status: s.status,
  attempts: s.attempts,
  lastHttpStatus: s.lastHttpStatus ?? null,
  nextAttemptAt: s.nextAttemptAt ?? null,
  series: s.series,
  step: s.step,
});

/** The only step that can follow `at` (see above). */
const nextStepId = (delivery: string, at: DeliveryState) =>
  at.status === 'pending'
    ? deliveryStepId(delivery, at.series, at.step + 1)
    : deliveryStepId(delivery, at.series + 1, 0);

export const sameStep = (a: DeliveryState, b: DeliveryState) => a.series === b.series && a.step === b.step;

/** The delivery's latest state, read on from `from` (its record's copy, or a step a run read before). */
export async function latestStep(
  models: Models,
  delivery: string,
  from: DeliveryState,
): Promise<DeliveryState> {
  for (let at = from; ;) {
    const id = nextStepId(delivery, at);
    const next = await retryTransient(() =>
      models.WebhookDeliveryStep.findById(id).lean<WebhookDeliveryStep>().exec(),
    );
    if (!next) return at;
    at = stateOfStep(next);
  }
}

/** The same, among steps already read (`steps`, by `_id`): an organisation's listing. */
export function latestAmong(
  steps: ReadonlyMap<string, WebhookDeliveryStep>,
  delivery: string,
  from: DeliveryState,
): DeliveryState {
  let at = from;
  for (let next = steps.get(nextStepId(delivery, at)); next; next = steps.get(nextStepId(delivery, at)))
    at = stateOfStep(next);
  return at;
}

/** An organisation's steps, by `_id` (the listing's one read; FerretDB reads the collection whole for it). */
export async function stepsOf(
  models: Models,
  organisationId: Types.ObjectId,
): Promise<Map<string, WebhookDeliveryStep>> {
  const steps = await retryTransient(() =>
    models.WebhookDeliveryStep.find({ organisationId })
      .lean<(WebhookDeliveryStep & { _id: string })[]>()
      .exec(),
  );
  return new Map(steps.map((s) => [s._id, s]));
}

/**
 * Inserts `state` as the step it names (its series and step), unless another run inserted that step first:
 * then null. Retried on a transient error like any insert of a derived id: a retry that finds the step its first
 * try wrote takes it for another run's (the caller reads it as the latest all the same).
 */
export async function insertStep(
  models: Models,
  delivery: { id: string; organisationId: Types.ObjectId },
  state: DeliveryState,
  now: Date,
): Promise<DeliveryState | null> {
  const model = models.WebhookDeliveryStep;
  const doc = completeDocument(
    model,
    {
      _id: deliveryStepId(delivery.id, state.series, state.step),
      deliveryId: delivery.id,
      organisationId: delivery.organisationId,
      ...state,
      at: now,
    },
    now,
  );
  const [outcome] = await retryTransient(() => batchedInsert(model, [doc]));
  return outcome === 'inserted' ? state : null;
}

/**
 * Copies `state` onto the delivery record, then reads on from it: should a newer step be there (its writer
 * copied it before this copy landed), that one is copied in turn. The last copy is so always the latest step's
 * at the time it is made. Returns what it copied last.
 */
export async function copySteps(
  models: Models,
  delivery: string,
  state: DeliveryState,
): Promise<DeliveryState> {
  for (let at = state; ;) {
    const { series, ...rest } = at;
    await retryTransient(() =>
      models.WebhookDelivery.updateOne({ _id: delivery }, { $set: { ...rest, replays: series } }).exec(),
    );
    const latest = await latestStep(models, delivery, at);
    if (sameStep(latest, at)) return at;
    at = latest;
  }
}
