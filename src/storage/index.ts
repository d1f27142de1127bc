import type { Models } from '../models/index.js';
import { LedgerJournal } from './ledger-journal.js';

/**
 * The storage seam: one repository per aggregate, built once per set of models (one database connection) so
 * that what a repository remembers (the ledger journal's heads) is shared by everything using that connection.
 */
export type Storage = { journal: LedgerJournal };

const byModels = new WeakMap<Models, Storage>();

export function storageFor(models: Models): Storage {
  let storage = byModels.get(models);
  if (!storage) {
    storage = { journal: new LedgerJournal(models.JournalEntry) };
    byModels.set(models, storage);
  }
  return storage;
}
