import { Types } from 'mongoose';
import type { Config } from '../../config.js';
import { migrationRefusal } from '../../domain/supplier.js';
import type { ValidationContext, ValidationResult } from '../../domain/validation/index.js';
import type { AccountPayload } from '../../schemas/account.js';
import type { Storage } from '../../storage/index.js';
import { payloadHash, type ProcessRow, type StagedText } from '../../storage/processes/import-processes.js';
import type { AccountRow } from '../../storage/records/accounts.js';
import { accountIdFor } from '../../storage/records/created-accounts.js';
import type { Supplier } from '../../storage/records/suppliers.js';
import { accountFields, buildJournalOpening, buildNotes, type RecordContext } from './records.js';
import { CreationRun, type RunIdentity } from './runs.js';
import { creationValidationContext, validateStaged } from './validation-fingerprint.js';

/**
 * Account creation: the staged payload becomes the account and its records. Idempotent by construction,
 * so a worker killed at any point and the job retried ends with one account and one copy of each record:
 * the account is unique per import process, child records have ids derived from their natural keys
 * (inserts of existing ones are duplicate-key no-ops), and the process is marked imported last.
 * Business outcomes are returned; only real failures (database down, bugs) throw.
 * Every database access goes through the storage object.
 */

export type CreationInput = {
  processId: string;
  operationsTeamId: string;
  dryRun: boolean;
  jobId: string;
  /**
   * Awaited once the reads are done and before anything is written (or, for a dry run, built): the worker's
   * concurrency slot check runs alongside the reads instead of ahead of them. It may throw to stop the run.
   */
  beforeWrites?: () => Promise<void>;
  /**
   * The run's place in the process's history (STARTED, then its outcome). Without it nothing is recorded;
   * a v1 dry run records nothing either.
   */
  run?: RunIdentity;
  /** The payload to create from, by its hash (a scheduled task's); else the one staged now. */
  payloadHash?: string;
};

export type CreationDeps = { storage: Storage; config: Config; clock: () => Date };

export type CreationRefusal =
  | 'import_process_does_not_exist'
  | 'account_import_process_skipped'
  | 'import_supplier_migration_not_ongoing'
  | 'operations_team_name_does_not_exist'
  | 'account_failed_validation'
  | 'dry_run_rolled_back'
  /** A scheduled task that is no longer the process's to run (replaced, cancelled or overtaken). */
  | 'task_superseded';

/** A validation finding without its detail (which may quote payload values): its code and path only. */
export type RefusedField = { code: string; attr: string };

/** Job results are stored in clear text in Redis: codes and numbers only, never payload data. */
export type CreationOutcome =
  | { ok: true; kraken_account_number: string; account_id: string; send_email: boolean }
  | { ok: false; code: CreationRefusal; detail?: string; errors?: RefusedField[] }
  | {
      ok: false;
      code: 'account_import_process_already_imported';
      external_account_number: string;
      kraken_account_number: string;
    };

type Validated = ValidationResult<AccountPayload>;

/** What the checks before the writes leave to a creation: the supplier, the payload and its validation. */
type Accepted = { supplier: Supplier; staged: StagedText; validated: Validated; context: ValidationContext };

const refuse = (code: CreationRefusal, detail?: string): CreationOutcome => ({
  ok: false,
  code,
  ...(detail ? { detail } : {}),
});

const invalid = (errors: readonly RefusedField[]) => ({
  ok: false as const,
  code: 'account_failed_validation' as const,
  errors: errors.map(({ code, attr }) => ({ code, attr })),
});

/**
 * A refusal for invalid staged data, recorded on the process (codes and paths only) so that it can be told
 * later and by any API pod, and returned as the job's result.
 */
async function recordInvalid(
  storage: Storage,
  processId: string,
  errors: readonly RefusedField[],
): Promise<CreationOutcome> {
  const outcome = invalid(errors);
  await storage.processes.recordCreationRefusal(processId, { code: outcome.code, errors: outcome.errors });
  return outcome;
}

export async function createAccount(deps: CreationDeps, input: CreationInput): Promise<CreationOutcome> {
  let run: CreationRun | null = null;
  const outcome = await createFromProcess(deps, input, (process) => {
    if (!input.run || (input.dryRun && input.run.taskId === null)) return null;
    run = new CreationRun(
      deps.storage.events,
      {
        key: process._id,
        organisationId: process.organisationId,
        importSupplier: process.importSupplier,
        externalAccountNumber: process.externalAccountNumber,
      },
      input.run,
      deps.clock,
      process.history === true,
    );
    return run;
  });
  // A refusal is recorded before the job's answer: whoever learns the outcome finds it in the history too.
  // (A creation records its PROCESSED itself, before marking the process imported.)
  if (run && !outcome.ok && outcome.code !== 'task_superseded')
    await (run as CreationRun).finish(outcome, input.dryRun);
  return outcome;
}

/** The run that tells the process's history, made once the process is read (null: nothing recorded). */
type RunFor = (process: ProcessRow) => CreationRun | null;

/** The process read, checked, and (unless a dry run) its account and records written, the mark last. */
async function createFromProcess(
  deps: CreationDeps,
  input: CreationInput,
  runFor: RunFor,
): Promise<CreationOutcome> {
  // The API reads no process before enqueueing: these refusals, in the API's documented order, are the
  // worker's (an operator may mark a process skipped that was never staged). The payload is read alongside
  // (both by `_id`): wasted only on a refusal.
  const [process, staged] = await Promise.all([
    deps.storage.processes.find(input.processId),
    deps.storage.processes.loadStaged(input.processId, input.payloadHash),
  ]);
  if (!process) return refuse('import_process_does_not_exist');
  if (process.krakenAccountNumber)
    return importedAlready(deps.storage, input, process, process.krakenAccountNumber);
  const run = runFor(process);
  const accepted = await acceptCreation(deps, input, process, staged, run);
  if ('ok' in accepted) return accepted;
  await input.beforeWrites?.();
  const records = (accountId: Types.ObjectId): RecordContext => ({
    accountId,
    bucket: accepted.supplier.documentBucket ?? deps.config.DOCUMENT_BUCKET,
    documentRoot: accepted.supplier.documentRoot ?? '',
  });
  if (input.dryRun) return rehearse(deps.storage, accepted.validated, records(new Types.ObjectId()));
  const created = await insertAccount(deps, input, process, accepted);
  if ('ok' in created) return created;
  await writeRecords(deps, created.data, records(created.account._id));
  return markCreated(deps, input, process, created.account, run);
}

/**
 * An imported process: the same job retried after it had finished its writes gets the same success again;
 * anything else is told the account exists.
 */
async function importedAlready(
  storage: Storage,
  input: CreationInput,
  process: ProcessRow,
  krakenAccountNumber: string,
): Promise<CreationOutcome> {
  if (!input.dryRun && process.creationJobId === input.jobId) {
    const account = await storage.accounts.find(accountIdFor(process._id));
    if (account) return createdOutcome(account, krakenAccountNumber);
  }
  return {
    ok: false,
    code: 'account_import_process_already_imported',
    external_account_number: process.externalAccountNumber,
    kraken_account_number: krakenAccountNumber,
  };
}

/**
 * Everything a creation checks before it writes, in the documented order: the run's start (a task the process
 * no longer waits for stops here, before any effect), the process, the supplier, the team, then the payload's
 * validation. Returns the refusal, or what the writes need.
 */
async function acceptCreation(
  deps: CreationDeps,
  input: CreationInput,
  process: ProcessRow,
  staged: StagedText | null,
  run: CreationRun | null,
): Promise<CreationOutcome | Accepted> {
  // A v1 create's start is recorded alongside the reads below (its outcome is recorded after it: `finish`
  // waits for it).
  const started = run?.begin();
  // Awaited below for a task, else by `finish`: this only keeps an early failure from going unhandled.
  started?.catch(() => undefined); // silent-ok: awaited again below
  if (input.run?.taskId != null && (await started) === 'skip') return refuse('task_superseded');
  if (process.skipped) return refuse('account_import_process_skipped');
  if (!process.stagedAt) return refuse('import_process_does_not_exist');

  const supplier = await deps.storage.suppliers.find(process.importSupplier, process.organisationId);
  if (!supplier) return refuse('import_process_does_not_exist');
  const refusal = migrationRefusal(supplier);
  if (refusal) return refuse(refusal.code, refusal.detail);
  if (!(await deps.storage.suppliers.teamExists(input.operationsTeamId))) {
    return refuse('operations_team_name_does_not_exist');
  }

  if (!staged) return refuse('import_process_does_not_exist');
  const context = creationValidationContext(deps.config, supplier.region, deps.clock());
  return { supplier, staged, validated: validateStaged(staged, context), context };
}

/** A dry run: everything up to the writes, including the models' own validation of every document. */
async function rehearse(
  storage: Storage,
  validated: Validated,
  ctx: RecordContext,
): Promise<CreationOutcome> {
  if (!validated.ok) return invalid(validated.errors);
  buildJournalOpening(validated.data, ctx);
  // Rejects with the model's ValidationError, as a real insert would.
  await storage.accounts.validateRecords({ notes: buildNotes(validated.data, ctx) });
  return refuse('dry_run_rolled_back');
}

/**
 * The account, inserted first and read back only when it exists already (an interrupted creation): on
 * FerretDB's SQLite backend an `_id` lookup that finds nothing reads the whole accounts table, while the
 * duplicate key of an existing one is cheap. A resumed creation continues from the payload its account was
 * made from (its hash is on the account; a replaced payload stays readable under it), even if the account was
 * re-staged since. Returns the account with the data its records are made of, or the refusal (recorded).
 */
async function insertAccount(
  deps: CreationDeps,
  input: CreationInput,
  process: ProcessRow,
  { supplier, staged, validated, context }: Accepted,
): Promise<CreationOutcome | { account: AccountRow; data: AccountPayload }> {
  const { storage } = deps;
  const sourceHash = payloadHash(staged.text);
  const accountId = accountIdFor(process._id);
  const account = validated.ok
    ? await storage.accounts.insert(
        {
          _id: accountId,
          organisationId: process.organisationId,
          importSupplier: process.importSupplier,
          externalAccountNumber: process.externalAccountNumber,
          processId: process._id,
          operationsTeamId: new Types.ObjectId(input.operationsTeamId),
          ...accountFields(validated.data),
          sourceHash,
          migrationEmailStatus: supplier.sendMigrationEmail === true ? 'pending' : null,
        },
        deps.clock(),
      )
    : await storage.accounts.find(accountId);
  if (!account) return recordInvalid(storage, process._id, validated.ok ? [] : validated.errors);
  const original = await originalPayload(storage, process._id, account, sourceHash);
  const data = original !== null ? validateStaged(original, context) : validated;
  if (!data.ok) return recordInvalid(storage, process._id, data.errors);
  return { account, data: data.data };
}

/** The account's records: notes, and its ledger journal's first entry (ledgers, transactions, statements). */
async function writeRecords(deps: CreationDeps, data: AccountPayload, ctx: RecordContext) {
  const now = deps.clock();
  await Promise.all([
    deps.storage.notes.insert(buildNotes(data, ctx), now),
    deps.storage.journal.open(ctx.accountId, buildJournalOpening(data, ctx), now),
  ]);
}

/**
 * The run's PROCESSED, then the mark that makes the account count as imported. The history's PROCESSED comes
 * before the mark: a run interrupted between the two finds the process not imported, runs again (every write
 * so far is idempotent) and finds PROCESSED recorded (not recorded twice).
 */
async function markCreated(
  deps: CreationDeps,
  input: CreationInput,
  process: ProcessRow,
  account: AccountRow,
  run: CreationRun | null,
): Promise<CreationOutcome> {
  const created = createdOutcome(account, account.number);
  await run?.finish(created, false);
  // Unconditional (a filter on `_id` alone): the account, and so its number and creation time, is the one
  // account of this process, so every retry writes the same. The job id lets a retry of this same job answer
  // success again (see `importedAlready`), any other "already imported".
  const now = deps.clock();
  await deps.storage.processes.markImported(
    process._id,
    {
      krakenAccountNumber: account.number,
      accountCreatedAt: account.createdAt ?? now,
      creationJobId: input.jobId,
    },
    now,
  );
  return created;
}

function createdOutcome(account: AccountRow, krakenAccountNumber: string) {
  return {
    ok: true as const,
    kraken_account_number: krakenAccountNumber,
    account_id: account._id.toHexString(),
    send_email: account.migrationEmailStatus === 'pending',
  };
}

/**
 * The payload an interrupted creation started from, when the staged payload has been replaced since (null
 * when it is the one staged now). Accounts created before payload hashes kept the payload itself.
 */
async function originalPayload(
  storage: Storage,
  processId: string,
  account: AccountRow,
  stagedHash: string,
): Promise<StagedText | null> {
  if (account.sourcePayload) return { text: account.sourcePayload, validatedWith: null };
  if (!account.sourceHash || account.sourceHash === stagedHash) return null;
  const archived = await storage.processes.loadStaged(processId, account.sourceHash);
  if (archived === null) throw new Error(`payload ${account.sourceHash} of process ${processId} is missing`);
  return archived;
}
