import { emptyState, onStaged } from '../../domain/import-process/state.js';
import type { Storage } from '../../storage/index.js';
import {
  payloadHash,
  type ProcessRow,
  type StagedPayloadInput,
  type StageMode,
} from '../../storage/processes/import-processes.js';
import { processKey } from '../../storage/processes/process-key.js';

export type StageOutcome =
  /** `deferred`: the payload waits under its hash for `storage.processes.promoteStaged` (mode `defer` only). */
  | { status: 'created' | 'updated'; deferred: boolean }
  | { status: 'already_imported'; krakenAccountNumber: string }
  | { status: 'skipped' };

/** What a stage stores (the process's CREATED event is the stage's to decide, see `stageAccount`). */
export type StageInput = Omit<StagedPayloadInput, 'history'>;

/**
 * Stages an account: refused once it is imported or skipped, else its payload is stored or replaced. The
 * refusals are a read before the writes: a stage racing the final step of a create may still store its
 * payload after the account exists, which changes nothing (an imported process is never created from again,
 * and an interrupted creation resumes from the payload it started from).
 * A first stage (v1 stage or v2 schedule) records the process's CREATED event, before the process itself.
 */
export async function stageAccount(
  storage: Storage,
  input: StageInput,
  mode: StageMode = 'replace',
  /** The process as the caller has just read it (`storage.processes.find`), so that it is not read twice. */
  known?: { process: ProcessRow | null },
): Promise<StageOutcome> {
  const key = processKey(input.importSupplier, input.externalAccountNumber);
  const existing = known ? known.process : await storage.processes.find(key);
  if (existing?.krakenAccountNumber)
    return { status: 'already_imported', krakenAccountNumber: existing.krakenAccountNumber };
  if (existing?.skipped) return { status: 'skipped' };
  // A first stage records CREATED before the process exists, so a process marked `history` always has it
  // (a stage cut short in between leaves an event that the next first stage finds, not a process without it).
  if (!existing) {
    await storage.events.append(
      {
        key,
        organisationId: input.organisationId,
        importSupplier: input.importSupplier,
        externalAccountNumber: input.externalAccountNumber,
      },
      (state) => ({ event: onStaged(state), result: null }),
      input.now,
      { assume: emptyState },
    );
  }
  const stored = await storage.processes.storeStaged(
    { ...input, history: !existing },
    existing !== null,
    mode,
  );
  // A stage that replaced other data is a step of the account's timeline (its first stage is CREATED).
  if (stored.replaced)
    await storage.timeline.recordRestage(key, payloadHash(input.payload).slice(0, 16), input.now);
  return stored;
}
