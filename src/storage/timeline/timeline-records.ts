import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import { accountStepId } from '../models/account-step.js';
import { postImportEventId, processEventId } from '../models/import-event.js';
import { journalEntryId } from '../models/journal-entry.js';
import type { RequestMark } from '../journal/journal-state.js';
import { batchedInsert, completeDocument } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * What an account's timeline is read from (`use-cases/timeline/`), and the re-stages it records itself. Every
 * read is by `_id`: a series of entries numbered from a known start (the history, the ledger journal, the
 * re-stages) is read in pages of `{_id: {$in: [...]}}` until an entry is missing, which FerretDB answers from
 * its `_id` index (the project's build, `scripts/ferretdb-id-lookups.patch`) as MongoDB does. Nothing here
 * reads payloads or journal records: projections keep to times, codes and counts.
 */

/** The re-stages an account's timeline records, at most (a stage past them records nothing more). */
export const MAX_RESTAGES = 200;

/** How many numbered entries one read asks for. */
const PAGE = 32;
/** Ids per `$in` read (the patched FerretDB looks up at most 1,000 at once). */
const IN_LIMIT = 1000;

export type TimelineEvent = {
  seq: number;
  event: string | null;
  type: string | null;
  eventId: string;
  data: string;
  run: string | null;
  worker?: string | null;
  queuedAt?: Date | null;
  occurredAt: Date;
};

export type TimelineEntry = { seq: number; kind: string; request: RequestMark | null; createdAt: Date };

export type TimelineRestage = { n: number; hash: string; at: Date };

export type TimelineDelivery = {
  _id: string;
  eventId: string;
  type: string;
  endpointId: Types.ObjectId;
  status: string;
  attempts: number;
  lastHttpStatus: number | null;
  replays?: number | null;
  step?: number | null;
  nextAttemptAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
};

/** Entries `from`, `from + 1`, … of a numbered series up to the first missing one (at most `max`). */
async function readSeries<T extends { _id: string }>(
  read: (ids: string[]) => Promise<T[]>,
  idOf: (n: number) => string,
  from: number,
  max: number,
): Promise<{ rows: { n: number; row: T }[]; more: boolean }> {
  const rows: { n: number; row: T }[] = [];
  for (let start = from; rows.length < max; start += PAGE) {
    const ns = Array.from({ length: Math.min(PAGE, max - rows.length) }, (_, i) => start + i);
    const found = new Map((await read(ns.map(idOf))).map((row) => [row._id, row]));
    for (const n of ns) {
      const row = found.get(idOf(n));
      if (!row) return { rows, more: false };
      rows.push({ n, row });
    }
  }
  // Full: one more entry says whether the series goes on past the bound.
  const next = await read([idOf(from + rows.length)]);
  return { rows, more: next.length > 0 };
}

const byIds = (ids: readonly string[]) => ({ _id: { $in: ids } });

export class TimelineRecords {
  constructor(private readonly models: Models) {}

  /** The process's history, oldest first, VOID entries included (`more`: it goes on past `max`). */
  async events(key: string, max: number) {
    const { rows, more } = await readSeries(
      (ids) =>
        retryTransient(() =>
          this.models.ImportEvent.find(byIds(ids), {
            event: 1,
            type: 1,
            eventId: 1,
            data: 1,
            run: 1,
            worker: 1,
            queuedAt: 1,
            occurredAt: 1,
          })
            .lean<(Omit<TimelineEvent, 'seq'> & { _id: string })[]>()
            .exec(),
        ),
      (n) => processEventId(key, n),
      0,
      max,
    );
    return { events: rows.map(({ n, row }) => ({ ...row, seq: n }) as TimelineEvent), more };
  }

  /**
   * The post-import events of the writes `requests` names (`<resource>:<ref>`, a journal entry's request key):
   * those recorded (one without its event is left out).
   */
  async postImportEvents(key: string, requests: readonly string[]) {
    if (requests.length === 0) return [];
    const ids = requests.slice(0, IN_LIMIT).map((request) => {
      const at = request.indexOf(':');
      return postImportEventId(key, request.slice(0, at), request.slice(at + 1));
    });
    return retryTransient(() =>
      this.models.ImportEvent.find(byIds(ids), { type: 1, eventId: 1, data: 1, occurredAt: 1 })
        .lean<{ _id: string; type: string | null; eventId: string; data: string; occurredAt: Date }[]>()
        .exec(),
    );
  }

  /** The account's ledger journal after its opening entry: what each entry was, without its records. */
  async journal(accountId: Types.ObjectId, max: number) {
    const hex = accountId.toHexString();
    const { rows, more } = await readSeries(
      (ids) =>
        retryTransient(() =>
          this.models.JournalEntry.find(byIds(ids), { kind: 1, request: 1, createdAt: 1 })
            .lean<{ _id: string; kind: string; request?: string | null; createdAt: Date }[]>()
            .exec(),
        ),
      (n) => journalEntryId(hex, n),
      1,
      max,
    );
    const entries: TimelineEntry[] = rows.map(({ n, row }) => ({
      seq: n,
      kind: row.kind,
      request: row.request ? (JSON.parse(row.request) as RequestMark) : null,
      createdAt: row.createdAt,
    }));
    return { entries, more };
  }

  /** The account's re-stages, oldest first. */
  async restages(key: string, max: number) {
    const { rows, more } = await readSeries(
      (ids) =>
        retryTransient(() =>
          this.models.AccountStep.find(byIds(ids)).lean<{ _id: string; hash: string; at: Date }[]>().exec(),
        ),
      (n) => accountStepId(key, n),
      1,
      max,
    );
    const restages: TimelineRestage[] = rows.map(({ n, row }) => ({ n, hash: row.hash, at: row.at }));
    return { restages, more };
  }

  /**
   * Records a re-stage of `hash` at `at` (its stage replaced other data), unless the last one recorded is of the
   * same data (two stages of it at once) or `max` are recorded already. Returns whether it recorded one.
   */
  async recordRestage(key: string, hash: string, at: Date, max = MAX_RESTAGES) {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { restages, more } = await this.restages(key, max);
      const last = restages[restages.length - 1];
      if (more || restages.length >= max || last?.hash === hash) return false;
      const n = (last?.n ?? 0) + 1;
      const doc = completeDocument(this.models.AccountStep, { _id: accountStepId(key, n), hash, at }, at);
      const [outcome] = await retryTransient(() => batchedInsert(this.models.AccountStep, [doc]));
      if (outcome === 'inserted') return true;
      // Another stage took the number: read again and decide again.
    }
    return false;
  }

  /** The organisation's endpoints, removed ones too (a delivery made before the removal stays in the timeline). */
  async endpointIds(organisationId: Types.ObjectId): Promise<Types.ObjectId[]> {
    const rows = await retryTransient(() =>
      this.models.WebhookEndpoint.find({ organisationId }, { _id: 1 })
        .lean<{ _id: Types.ObjectId }[]>()
        .exec(),
    );
    return rows.map((r) => r._id);
  }

  /** Deliveries by `_id` (ids without one are left out), in reads of at most 1,000 ids. */
  async deliveries(ids: readonly string[]): Promise<TimelineDelivery[]> {
    const out: TimelineDelivery[] = [];
    for (let i = 0; i < ids.length; i += IN_LIMIT) {
      const chunk = ids.slice(i, i + IN_LIMIT);
      out.push(
        ...(await retryTransient(() =>
          this.models.WebhookDelivery.find(byIds(chunk)).lean<TimelineDelivery[]>().exec(),
        )),
      );
    }
    return out;
  }
}
