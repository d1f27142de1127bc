import type { Types } from 'mongoose';
import type { Models } from '../models/index.js';
import type { PaymentInstructionSummary } from './journal-figures.js';
import { listNoteKeys } from '../records/notes.js';
import { findActiveInstruction } from '../records/payment-instructions.js';

/**
 * What an account written before the figures were kept holds outside its journal: its notes' dedup keys and
 * its active payment instruction. Read once per such account (both are collection reads on FerretDB v1).
 */
export type LegacyFacts = { noteKeys: string[]; paymentInstruction: PaymentInstructionSummary | null };

export type JournalDeps = {
  /** The heads' hints; null: none kept (every read probes from the cached head or entry 0). */
  hints: Models['JournalHead'] | null;
  legacyFacts: (accountId: Types.ObjectId) => Promise<LegacyFacts>;
};

/** The repositories of the journal's connection. */
export function depsOf(models: Models): JournalDeps {
  return {
    hints: models.JournalHead,
    async legacyFacts(accountId) {
      const [noteKeys, active] = await Promise.all([
        listNoteKeys(models, accountId),
        findActiveInstruction(models, accountId),
      ]);
      return {
        noteKeys,
        paymentInstruction: active ? { vendor: active.vendor, status: active.status } : null,
      };
    },
  };
}
