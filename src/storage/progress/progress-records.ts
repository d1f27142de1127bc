import type { Models } from '../models/index.js';

/**
 * What the progress counts are derived again from (`use-cases/progress/rebuild.ts`): a supplier's import
 * processes and events, each read in one pass (a cursor over the supplier's records rather than a probe per
 * process: the rebuild of a large cohort is bound by the database's scan), and the writer of one event.
 */

/** An import process as the rebuild counts it. */
export type ProcessRow = {
  _id: string;
  externalAccountNumber: string;
  stagedAt?: Date | null;
  krakenAccountNumber?: string | null;
  skipped?: boolean | null;
  updatedAt?: Date | null;
};

/** An event of a supplier: a process history's (with its `seq`) or a post-import event (without). */
export type SupplierEventRow = {
  _id: string;
  externalAccountNumber: string;
  seq?: number | null;
  event?: string | null;
  type?: string | null;
  data: string;
  run?: string | null;
  occurredAt: Date;
};

const BATCH_SIZE = 1000;

/** Every event of the supplier, in no particular order. */
export function supplierEvents(models: Models, supplier: string): AsyncIterable<SupplierEventRow> {
  return models.ImportEvent.find({ importSupplier: supplier })
    .select({ _id: 1, externalAccountNumber: 1, seq: 1, event: 1, type: 1, data: 1, run: 1, occurredAt: 1 })
    .lean<SupplierEventRow>()
    .cursor({ batchSize: BATCH_SIZE }) as AsyncIterable<SupplierEventRow>;
}

/** Every import process of the supplier, in no particular order. */
export function supplierProcesses(models: Models, supplier: string): AsyncIterable<ProcessRow> {
  return models.AccountImportProcess.find({ importSupplier: supplier })
    .select({ externalAccountNumber: 1, stagedAt: 1, krakenAccountNumber: 1, skipped: 1, updatedAt: 1 })
    .lean<ProcessRow>()
    .cursor({ batchSize: BATCH_SIZE }) as AsyncIterable<ProcessRow>;
}

/** The event with this id (by `_id`) and the writer that wrote it, or null when it was never written. */
export async function findEventWriter(models: Models, id: string): Promise<{ writer: string } | null> {
  return models.ImportEvent.findById(id, { writer: 1 }).lean<{ writer: string }>().exec();
}
