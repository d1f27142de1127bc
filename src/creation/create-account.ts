import { Types } from 'mongoose';
import type { Config } from '../config.js';
import {
  parseValidatedAccount,
  validateAccount,
  type ValidationContext,
} from '../domain/validation/index.js';
import { deploymentCatalogue, validationContextAt } from '../domain/validation/deployment.js';
import { validationFingerprint } from './validation-fingerprint.js';
import type { Database } from '../infra/mongo.js';
import type { AccountPayload } from '../schemas/account.js';
import { loadStagedPayload, payloadHash } from './staging.js';
import type { StagedText } from '../storage/import-processes.js';
import { accountFields, buildJournalOpening, buildNotes, type RecordContext } from './records.js';
import { derivedId } from '../models/record-ids.js';
import { findAccount, insertAccount, type AccountRow } from '../storage/accounts.js';
import { insertNotes } from '../storage/notes.js';
import { findProcess, markImported, recordCreationRefusal } from '../storage/import-processes.js';
import { storageFor } from '../storage/index.js';
import { creationLookups } from './lookups.js';
import { CreationRun, type RunIdentity } from './runs.js';

/**
 * Account creation: the staged payload becomes the account and its records. Idempotent by construction,
 * so a worker killed at any point and the job retried ends with one account and one copy of each record:
 * the account is unique per import process, child records have ids derived from their natural keys
 * (inserts of existing ones are duplicate-key no-ops), and the process is marked imported last.
 * Business outcomes are returned; only real failures (database down, bugs) throw.
 * Every database access goes through the repositories in `src/storage/`.
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

export type CreationDeps = { db: Database; config: Config; clock: () => Date };

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

/**
 * The validation context a creation runs with: the supplier's region, the deployment's catalogue (the one
 * staging validated with), today.
 */
export function creationValidationContext(
  config: Config,
  region: string | null | undefined,
  now: Date,
): ValidationContext {
  return validationContextAt(deploymentCatalogue(config), region, now);
}

/**
 * A staged payload's validation at creation: in full, unless staging recorded that it passed a validation on
 * the very terms of this one (then only parsed: the rules would say the same again).
 */
function validateStaged(raw: unknown, validatedWith: string | null, ctx: ValidationContext) {
  return validatedWith !== null && validatedWith === validationFingerprint(ctx)
    ? parseValidatedAccount(raw, ctx)
    : validateAccount(raw, ctx);
}

/** One account per import process, by construction: its id is derived from the process key (and found by it). */
export function accountIdFor(processId: string): Types.ObjectId {
  return derivedId(processId, 'account');
}

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
  models: Database['models'],
  processId: string,
  errors: readonly RefusedField[],
): Promise<CreationOutcome> {
  const outcome = invalid(errors);
  await recordCreationRefusal(models, processId, { code: outcome.code, errors: outcome.errors });
  return outcome;
}

export async function createAccount(deps: CreationDeps, input: CreationInput): Promise<CreationOutcome> {
  let run: CreationRun | null = null;
  const outcome = await createFromProcess(deps, input, (process) => {
    if (!input.run || (input.dryRun && input.run.taskId === null)) return null;
    run = new CreationRun(
      storageFor(deps.db.models).events,
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
type RunFor = (process: NonNullable<Awaited<ReturnType<typeof findProcess>>>) => CreationRun | null;

async function createFromProcess(
  deps: CreationDeps,
  input: CreationInput,
  runFor: RunFor,
): Promise<CreationOutcome & { code?: string }> {
  const { models } = deps.db;
  const lookups = creationLookups(deps.db, deps.config);
  // The API reads no process before enqueueing: these refusals, in the API's documented order, are the
  // worker's (an operator may mark a process skipped that was never staged). The payload is read alongside
  // (both by `_id`): wasted only on a refusal.
  const [process, staged] = await Promise.all([
    findProcess(models, input.processId),
    loadStagedPayload(models, input.processId, input.payloadHash),
  ]);
  if (!process) return refuse('import_process_does_not_exist');
  if (process.krakenAccountNumber) {
    // The same job retried after it had finished its writes: the same success again.
    if (!input.dryRun && process.creationJobId === input.jobId) {
      const account = await findAccount(models, accountIdFor(process._id));
      if (account) {
        return {
          ok: true,
          kraken_account_number: process.krakenAccountNumber,
          account_id: account._id.toHexString(),
          send_email: account.migrationEmailStatus === 'pending',
        };
      }
    }
    return {
      ok: false,
      code: 'account_import_process_already_imported',
      external_account_number: process.externalAccountNumber,
      kraken_account_number: process.krakenAccountNumber,
    };
  }
  // A v1 create's start is recorded alongside the reads below (its outcome is recorded after it: `finish`
  // waits for it). A task decides first: one the process no longer waits for stops here, before any effect.
  const run = runFor(process);
  const started = run?.begin();
  started?.catch(() => undefined);
  if (input.run?.taskId != null && (await started) === 'skip') return refuse('task_superseded');
  if (process.skipped) return refuse('account_import_process_skipped');
  if (!process.stagedAt) return refuse('import_process_does_not_exist');

  const supplier = await lookups.supplier(process.importSupplier, process.organisationId);
  if (!supplier) return refuse('import_process_does_not_exist');
  if (supplier.status !== 'Ongoing') {
    return refuse(
      'import_supplier_migration_not_ongoing',
      `Migrations for import supplier ${supplier.code} are ${supplier.status}.`,
    );
  }
  if (!(await lookups.teamExists(input.operationsTeamId))) {
    return refuse('operations_team_name_does_not_exist');
  }

  if (!staged) return refuse('import_process_does_not_exist');
  const validationContext = creationValidationContext(deps.config, supplier.region, deps.clock());
  let validated = validateStaged(JSON.parse(staged.text), staged.validatedWith, validationContext);
  const sendEmail = supplier.sendMigrationEmail === true;
  await input.beforeWrites?.();

  const recordContext = (accountId: Types.ObjectId): RecordContext => ({
    accountId,
    bucket: supplier.documentBucket ?? deps.config.DOCUMENT_BUCKET,
    documentRoot: supplier.documentRoot ?? '',
  });

  if (input.dryRun) {
    if (!validated.ok) return invalid(validated.errors);
    const data = validated.data;
    // Everything up to the writes, including the models' own validation of every document.
    const ctx = recordContext(new Types.ObjectId());
    buildJournalOpening(data, ctx);
    // Rejects with the model's ValidationError, as a real insert would.
    await Promise.all(buildNotes(data, ctx).map((doc) => new models.Note(doc).validate()));
    return refuse('dry_run_rolled_back');
  }

  // The account is inserted first and read back only when it exists already (an interrupted creation): on
  // FerretDB's SQLite backend an `_id` lookup that finds nothing reads the whole accounts table, while the
  // duplicate key of an existing one is cheap. A resumed creation continues from the payload its account
  // was made from (its hash is on the account; a replaced payload stays readable under it), even if the
  // account was re-staged since.
  const sourceHash = payloadHash(staged.text);
  const accountId = accountIdFor(process._id);
  const account = validated.ok
    ? await insertAccount(
        models,
        {
          _id: accountId,
          organisationId: process.organisationId,
          importSupplier: process.importSupplier,
          externalAccountNumber: process.externalAccountNumber,
          processId: process._id,
          operationsTeamId: new Types.ObjectId(input.operationsTeamId),
          ...accountFields(validated.data),
          sourceHash,
          migrationEmailStatus: sendEmail ? 'pending' : null,
        },
        deps.clock(),
      )
    : await findAccount(models, accountId);
  if (!account) return recordInvalid(models, process._id, validated.ok ? [] : validated.errors);
  const original = await originalPayload(models, process._id, account, sourceHash);
  if (original !== null) {
    validated = validateStaged(JSON.parse(original.text), original.validatedWith, validationContext);
  }
  if (!validated.ok) return recordInvalid(models, process._id, validated.errors);
  const data = validated.data;

  const ctx = recordContext(account._id);
  await writeRecords(deps.db, data, ctx, deps.clock());

  const created = {
    ok: true as const,
    kraken_account_number: account.number,
    account_id: account._id.toHexString(),
    send_email: account.migrationEmailStatus === 'pending',
  };
  // The history's PROCESSED comes before the mark: a run interrupted between the two finds the process not
  // imported, runs again (every write so far is idempotent) and finds PROCESSED recorded (not recorded twice).
  await run?.finish(created, false);

  // Last: from here on the account counts as imported. Unconditional (a filter on `_id` alone): the account,
  // and so its number and creation time, is the one account of this process, so every retry writes the same.
  // The job id lets a retry of this same job answer success again (see the top), any other "already imported".
  const now = deps.clock();
  await markImported(
    models,
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

/** The account's records: notes, and its ledger journal's first entry (ledgers, transactions, statements). */
async function writeRecords(db: Database, data: AccountPayload, ctx: RecordContext, now: Date) {
  await Promise.all([
    insertNotes(db.models, buildNotes(data, ctx), now),
    storageFor(db.models).journal.open(ctx.accountId, buildJournalOpening(data, ctx), now),
  ]);
}

/**
 * The payload an interrupted creation started from, when the staged payload has been replaced since (null
 * when it is the one staged now). Accounts created before payload hashes kept the payload itself.
 */
async function originalPayload(
  models: Database['models'],
  processId: string,
  account: AccountRow,
  stagedHash: string,
): Promise<StagedText | null> {
  if (account.sourcePayload) return { text: account.sourcePayload, validatedWith: null };
  if (!account.sourceHash || account.sourceHash === stagedHash) return null;
  const archived = await loadStagedPayload(models, processId, account.sourceHash);
  if (archived === null) throw new Error(`payload ${account.sourceHash} of process ${processId} is missing`);
  return archived;
}
