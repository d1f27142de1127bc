import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { ImportEventDoc } from '../models/import-event.js';
import { deliveryId, type WebhookDelivery } from '../models/webhook-delivery.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';
import type { EndpointRow } from './webhook-endpoints.js';
import {
  copySteps,
  insertStep,
  latestAmong,
  latestStep,
  recordedStateFields,
  sameStep,
  stateOfRecord,
  stepsOf,
  type DeliveryState,
  type RecordedState,
} from './webhook-steps.js';

/**
 * Webhook deliveries: one per event and endpoint, each with its history of steps (`webhook-steps.ts`) and, while
 * pending, a due entry (`webhook_due`) where the outbox sweep looks for overdue ones, never in the delivery
 * collection (which FerretDB would read whole). Deliveries are read and written by `_id`.
 */

export type DeliveryRow = WebhookDelivery & { _id: string };
/** What a delivery's attempts so far left: its record's state. */
export type MadeAttempt = Pick<DeliveryRow, 'status' | 'attempts' | 'lastHttpStatus' | 'nextAttemptAt'>;

export class WebhookDeliveries {
  constructor(private readonly models: Models) {}

  /** The id of an event's delivery to an endpoint, known before it is written (`<eventId>.<endpointId>`). */
  idOf(eventId: string, endpointId: string): string {
    return deliveryId(eventId, endpointId);
  }

  /**
   * One delivery per endpoint (those already there are kept as they are); returns their ids, and whether each
   * was inserted now. Inserted pending with no attempt yet, due now, unless `made[i]` gives what the attempt
   * already made to endpoint `i` left (a first attempt made before the insert: `DirectDeliveries`).
   */
  async create(
    event: Pick<ImportEventDoc, '_id' | 'eventId' | 'type' | 'organisationId'>,
    endpoints: readonly EndpointRow[],
    now: Date,
    made: readonly (MadeAttempt | null)[] = [],
  ): Promise<{ id: string; endpointId: string; inserted: boolean }[]> {
    const model = this.models.WebhookDelivery;
    const docs = endpoints.map((endpoint, i) =>
      completeDocument(
        model,
        {
          _id: deliveryId(event.eventId, endpoint._id.toHexString()),
          eventId: event.eventId,
          eventKey: event._id,
          type: event.type!,
          endpointId: endpoint._id,
          organisationId: event.organisationId,
          ...(made[i] ?? { status: 'pending', attempts: 0, lastHttpStatus: null, nextAttemptAt: now }),
          replays: 0,
        },
        now,
      ),
    );
    // A delivery written pending has its due entry first, so the sweep can always find it.
    const due = docs
      .filter((d) => d.status === 'pending')
      .map((d) => ({ _id: d._id, dueAt: d.nextAttemptAt! }));
    if (due.length > 0) await retryTransient(() => batchedInsert(this.models.WebhookDue, due));
    const outcomes = await retryTransient(() => batchedInsert(model, docs));
    return docs.map((d, i) => ({
      id: d._id,
      endpointId: d.endpointId.toHexString(),
      inserted: outcomes[i] === 'inserted',
    }));
  }

  async find(id: string): Promise<DeliveryRow | null> {
    return retryTransient(() => this.models.WebhookDelivery.findById(id).lean<DeliveryRow>().exec());
  }

  /** The delivery's latest state, read on from `from` (see `webhook-steps.ts`). */
  async latest(id: string, from: DeliveryState): Promise<DeliveryState> {
    return latestStep(this.models, id, from);
  }

  /** The latest state of one of the organisation's deliveries; null when it has none of that id. */
  async latestOf(organisationId: Types.ObjectId, id: string): Promise<DeliveryState | null> {
    const record = await this.models.WebhookDelivery.findOne({ _id: id, organisationId })
      .lean<DeliveryRow>()
      .exec();
    return record && this.latest(id, stateOfRecord(record));
  }

  /**
   * Records the step that follows `after` (what the run read right before its attempt): `next`, the attempt's
   * outcome, unless another run of the delivery's job recorded that step first. Returns whether this one did,
   * and the delivery's latest state (another run's outcome, when this one lost). Keeps the due entry in step:
   * moved to the next attempt before a pending step is written, deleted once the delivery is settled (a crash
   * in between leaves an entry the sweep finds settled, and deletes).
   */
  async recordStep(
    delivery: { id: string; organisationId: Types.ObjectId },
    after: DeliveryState,
    next: MadeAttempt,
  ): Promise<{ recorded: boolean; latest: DeliveryState }> {
    if (next.status === 'pending' && next.nextAttemptAt) await this.due(delivery.id, next.nextAttemptAt);
    const step = { ...next, series: after.series, step: after.step + 1 } as DeliveryState;
    const made = await insertStep(this.models, delivery, step, new Date());
    const latest = await copySteps(
      this.models,
      delivery.id,
      made ?? (await latestStep(this.models, delivery.id, after)),
    );
    if (latest.status !== 'pending') await this.settled(delivery.id);
    return { recorded: made !== null, latest };
  }

  /**
   * Starts the next series of a settled delivery (`latest`: its latest state): pending again, no attempt yet,
   * due now. Two replays at once start one series (the second finds its step written). Returns the series.
   */
  async replay(
    delivery: { id: string; organisationId: Types.ObjectId },
    latest: DeliveryState,
    now: Date,
  ): Promise<number> {
    const start: DeliveryState = {
      status: 'pending',
      attempts: 0,
      lastHttpStatus: latest.lastHttpStatus,
      nextAttemptAt: now,
      series: latest.series + 1,
      step: 0,
    };
    // Written pending: its due entry first, so the sweep's look for lost jobs can always find it.
    await this.due(delivery.id, now);
    const made = await insertStep(this.models, delivery, start, now);
    await copySteps(this.models, delivery.id, made ?? (await latestStep(this.models, delivery.id, latest)));
    return start.series;
  }

  /** An organisation's deliveries, oldest first, each with its latest state. */
  async ofOrganisation(organisationId: Types.ObjectId): Promise<(DeliveryRow & { latest: DeliveryState })[]> {
    const [rows, steps] = await Promise.all([
      retryTransient(() =>
        this.models.WebhookDelivery.find({ organisationId })
          .sort({ createdAt: 1 })
          .lean<DeliveryRow[]>()
          .exec(),
      ),
      stepsOf(this.models, organisationId),
    ]);
    return rows.map((r) => ({ ...r, latest: latestAmong(steps, r._id, stateOfRecord(r)) }));
  }

  /** A delivery's next attempt is due at `at` (its entry written or moved: before it is written pending). */
  async due(id: string, at: Date): Promise<void> {
    await retryTransient(() =>
      this.models.WebhookDue.updateOne({ _id: id }, { $set: { dueAt: at } }, { upsert: true }).exec(),
    );
  }

  /**
   * Deliveries still pending at least `olderThanMs` after they were due: normally a job is on them (queued
   * behind others, delayed for a busy endpoint, running), but a Redis failover may have lost it. The sweep
   * looks at each one's job. Found among the due entries past that time (each delivery read by `_id`).
   */
  async overdue(olderThanMs: number, limit: number, now: Date): Promise<{ _id: string; replays: number }[]> {
    const cutoff = new Date(now.getTime() - olderThanMs);
    const entries = await retryTransient(() =>
      this.models.WebhookDue.find({ dueAt: { $lt: cutoff } })
        .limit(limit)
        .lean<{ _id: string }[]>()
        .exec(),
    );
    const found = await Promise.all(entries.map(({ _id }) => this.overdueOne(_id, cutoff)));
    return found.filter((d): d is { _id: string; replays: number } => d !== null);
  }

  /**
   * A due entry past `cutoff`: its delivery when still pending and due before then. An entry whose delivery is
   * settled (or gone) is deleted on the way, one behind its delivery moved.
   */
  private async overdueOne(id: string, cutoff: Date): Promise<{ _id: string; replays: number } | null> {
    const record = await retryTransient(() =>
      this.models.WebhookDelivery.findById(id, recordedStateFields).lean<RecordedState>().exec(),
    );
    // Its latest step, not only its record's copy (behind when a run died between the two: copied now).
    const copy = record && stateOfRecord(record);
    const delivery = copy && (await this.latest(id, copy));
    if (copy && delivery && !sameStep(delivery, copy)) await copySteps(this.models, id, delivery);
    if (delivery?.status !== 'pending') {
      await this.settled(id);
      return null;
    }
    if (!delivery.nextAttemptAt) return null;
    if (delivery.nextAttemptAt < cutoff) return { _id: id, replays: delivery.series };
    // Due later than its entry said (a crash between the entry's move and the delivery's update): the
    // entry is moved, so it is not read again before then.
    await this.due(id, delivery.nextAttemptAt);
    return null;
  }

  /** A delivery is delivered or failed: it has no attempt due. */
  private async settled(id: string): Promise<void> {
    await retryTransient(() => this.models.WebhookDue.deleteOne({ _id: id }).exec());
  }
}
