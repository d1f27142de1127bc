import { randomUUID } from 'node:crypto';
import type { Types } from 'mongoose';
import {
  eventName,
  VOID_EVENT,
  type NewEvent,
  type ProcessEvent,
  type ProcessEventKind,
  webhookTypeOf,
} from '../../domain/import-process/state.js';
import { processEventId, type ImportEventDoc } from '../models/import-event.js';
import { formatUtcDatetime } from '../../schemas/primitives.js';

/**
 * What an import event is made of and told as, for the history's repository (`process-events.ts`): who a
 * process is, what its writer knows of an event, a stored entry read back as an event, the webhook body and
 * the history's answer. Pure: no database here.
 */

export type ProcessIdentity = {
  key: string;
  organisationId: Types.ObjectId;
  importSupplier: string;
  externalAccountNumber: string;
};

/**
 * What a caller hands to the webhook relay, an event as its writer knows it: its `_id` (the queue job is keyed by
 * its `eventId`); its organisation, webhook type and time when this writer inserted it (not when it found the event
 * already there).
 */
export type RecordedEvent = {
  _id: string;
  eventId: string;
  dispatched: boolean;
  organisationId?: Types.ObjectId;
  type?: string | null;
  occurredAt?: Date;
  /** Its writer read the organisation's endpoints before writing it and found one subscribed. */
  subscribed?: boolean;
  /** The webhook body, when this writer inserted it (what a direct delivery sends). */
  body?: string | null;
};

/** The fields of a stored entry the history reads back. */
export type EntryFields = Pick<ImportEventDoc, '_id' | 'event' | 'data' | 'run' | 'occurredAt' | 'writer'>;

/** The event as the relay gets it from its writer (marked when the writer found it subscribed). */
export function recordedOf<D extends RecordedEvent>(doc: D, subscribed: boolean | null): RecordedEvent {
  return subscribed ? { ...doc, subscribed: true } : doc;
}

export const newEventId = () => `evt_${randomUUID().replaceAll('-', '')}`;

/** The webhook's `data`: who the event is about, and the error of a failure. Never personal data. */
export function webhookData(process: ProcessIdentity, event: NewEvent): Record<string, unknown> {
  const error = event.data.error as Record<string, unknown> | undefined;
  return {
    import_supplier: process.importSupplier,
    external_account_number: process.externalAccountNumber,
    kraken_account_number: (event.data.kraken_account_number as string | undefined) ?? null,
    ...(error ? { error } : {}),
  };
}

export function webhookBody(eventId: string, type: string, at: Date, data: Record<string, unknown>): string {
  return JSON.stringify({ id: eventId, type, occurred_at: formatUtcDatetime(at), data });
}

export function toEvent(seq: number, entry: Pick<EntryFields, 'event' | 'data' | 'run' | 'occurredAt'>) {
  if (!entry.event || entry.event === VOID_EVENT) return null;
  return {
    seq,
    kind: entry.event as ProcessEventKind,
    occurredAt: entry.occurredAt,
    data: JSON.parse(entry.data) as Record<string, unknown>,
    run: entry.run ?? null,
  } satisfies ProcessEvent;
}

/** The status body's `latest_event`, and an item of the history. */
export function describeEvent(event: ProcessEvent) {
  // Internal: the team's id (the request named it) and the hash of the payload a task creates from.
  const { operations_team_id: _team, payload_hash: _hash, ...data } = event.data;
  return { event: eventName(event.kind), occurred_at: formatUtcDatetime(event.occurredAt), data };
}

/**
 * The fields of a history entry (before the schema's defaults): written dispatched when it has no webhook type or
 * its writer found nobody subscribed (`subscribed` false; null when it could not tell).
 */
export function processEventFields(
  process: ProcessIdentity,
  seq: number,
  event: NewEvent,
  now: Date,
  subscribed: boolean | null,
) {
  const eventId = newEventId();
  const type = webhookTypeOf[event.kind];
  return {
    _id: processEventId(process.key, seq),
    eventId,
    organisationId: process.organisationId,
    importSupplier: process.importSupplier,
    externalAccountNumber: process.externalAccountNumber,
    seq,
    event: event.kind,
    type,
    data: JSON.stringify(event.data),
    run: event.run ?? null,
    ...(event.worker ? { worker: event.worker } : {}),
    ...(event.queuedAt ? { queuedAt: event.queuedAt } : {}),
    body: type ? webhookBody(eventId, type, now, webhookData(process, event)) : null,
    dispatched: type === null || subscribed === false,
    writer: randomUUID(),
    occurredAt: now,
  };
}
