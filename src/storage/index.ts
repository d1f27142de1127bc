import type { Models } from '../models/index.js';
import { LedgerJournal } from './ledger-journal.js';
import { ProcessEventLog } from './process-events.js';
import { progressCountersOf } from './progress-counters.js';
import { webhookStore } from './webhooks.js';

/**
 * The storage seam: one repository per aggregate, built once per set of models (one database connection) so
 * that what a repository remembers (the heads of ledger journals and process histories) is shared by everything using that connection.
 */
export type Storage = { journal: LedgerJournal; events: ProcessEventLog };

const byModels = new WeakMap<Models, Storage>();

export function storageFor(models: Models): Storage {
  let storage = byModels.get(models);
  if (!storage) {
    storage = {
      journal: new LedgerJournal(models.JournalEntry),
      events: new ProcessEventLog(
        models.ImportEvent,
        () => progressCountersOf(models),
        (organisationId, type, occurredAt) =>
          webhookStore(models).anySubscribed(organisationId, type, occurredAt),
      ),
    };
    byModels.set(models, storage);
  }
  return storage;
}
