import { Schema, type InferSchemaType } from 'mongoose';

/**
 * One import event: the state history of an import process, and the outbox of the webhooks that report it.
 *
 * - Process events (`seq` set): entry `seq` of a process's append-only history has `_id`
 *   `<process key>@<seq>`. The history is the process's v2 state: a change (schedule, start, cancel, outcome)
 *   is decided against the newest entry and written as the insert of the next number, so of two writers that
 *   read the same head exactly one wins (see `src/storage/process-events.ts`). The key never contains a
 *   digit-only suffix after its last '@', so ids cannot collide.
 * - Post-import events (`seq` null): `_id` `<process key>@p:<resource>:<ref>`, derived from the write they
 *   report, so recording one twice is a no-op. They are not part of the process's history.
 *
 * The outbox: an event with a webhook `type` is written with its webhook `body` (exact JSON text, signed as
 * is) fixed once, in the same insert that records the change. One nobody is subscribed to (and one without a
 * type) is written `dispatched`; any other is written with `dispatched: false` after its entry in
 * `webhook_outbox`, and is dispatched (one delivery per subscribed endpoint) while its entry is there: the
 * entry, not this field, says whether it still waits (the event is never written again). Nothing here is
 * personal data: codes, paths, account numbers and counts only.
 */
export const importEventSchema = new Schema(
  {
    _id: { type: String, required: true },
    /** The public id: the webhook's `id` and `webhook-id` header, stable across retries and replays. */
    eventId: { type: String, required: true },
    organisationId: { type: Schema.Types.ObjectId, required: true },
    importSupplier: { type: String, required: true },
    externalAccountNumber: { type: String, required: true },
    /** Position in the process's history; null for post-import events. */
    seq: { type: Number, default: null },
    /** STATE name for process events (`CREATED`, `SCHEDULED`, ... or `VOID`); null for post-import events. */
    event: { type: String, default: null },
    /** The webhook event type, null when the event is not published. */
    type: { type: String, default: null },
    /** The event's data as JSON text (shown in the history; codes and paths only). */
    data: { type: String, required: true },
    /** The run (job id) that started or finished the creation, when the event is one of those. */
    run: { type: String, default: null },
    /**
     * On a STARTED only (no default, so other events carry neither): the worker that ran the creation, as it
     * names itself (`<host>:<pid>`), and when its job was queued (a v1 create's; a task is due at its window).
     * Written in the STARTED insert itself, so a retried start never records a second one. For the timeline.
     */
    worker: { type: String },
    queuedAt: { type: Date },
    /** The webhook body, exact JSON text; null when not published. */
    body: { type: String, default: null },
    /** Written with nobody to dispatch it to (see above); false: its `webhook_outbox` entry tells. */
    dispatched: { type: Boolean, required: true },
    /** Identifies the attempt that inserted the entry (a writer whose insert answer was lost knows it won). */
    writer: { type: String, required: true },
    occurredAt: { type: Date, required: true },
  },
  { collection: 'import_events', versionKey: false },
);
export type ImportEventDoc = InferSchemaType<typeof importEventSchema>;

export const processEventId = (processKey: string, seq: number) => `${processKey}@${seq}`;
export const postImportEventId = (processKey: string, resource: string, ref: string) =>
  `${processKey}@p:${resource}:${ref}`;
