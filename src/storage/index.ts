import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { pingDatabase } from '../infra/mongo.js';
import type { RedisClient } from '../infra/redis.js';
import { openDatabase, type Database } from './database.js';
import { syncSchema } from './models/index.js';
import { depsOf } from './journal/journal-deps.js';
import { LedgerJournal } from './journal/ledger-journal.js';
import { ProcessEventLog } from './processes/process-events.js';
import * as processes from './processes/import-processes.js';
import { ProgressCounters } from './progress/progress-counters.js';
import * as accounts from './records/accounts.js';
import * as apiKeys from './records/api-keys.js';
import * as organisations from './records/organisations.js';
import { skipProcess } from './processes/process-skips.js';
import * as progressRecords from './progress/progress-records.js';
import * as notes from './records/notes.js';
import * as paymentInstructions from './records/payment-instructions.js';
import { CreatedAccounts } from './records/created-accounts.js';
import * as emailDeliveries from './records/email-deliveries.js';
import { SupplierStore } from './records/suppliers.js';
import { createWebhookStore, type WebhookStore } from './webhooks/webhook-store.js';
import * as cohortPlans from './cutover/cohort-plans.js';
import { CohortEvents } from './cutover/cohort-events.js';
import { TimelineRecords } from './timeline/timeline-records.js';

type Models = Database['models'];

/** Functions over the models with the models bound: `findAccount(models, id)` becomes `accounts.find(id)`. */
type Bound<M> = {
  [K in keyof M]: M[K] extends (models: Models, ...args: infer A) => infer R ? (...args: A) => R : never;
};

function bind<M extends Record<string, (models: Models, ...args: never[]) => unknown>>(
  db: Database,
  functions: M,
): Bound<M> {
  const bound: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(functions))
    bound[name] = (...args: never[]) => fn(db.models, ...args);
  return bound as Bound<M>;
}

/** The repositories that are functions over the models (each module's own names, shorter). */
const repositories = {
  apiKeys: {
    findById: apiKeys.findApiKeyById,
    findByHash: apiKeys.findApiKeyByHash,
    insert: apiKeys.insertApiKey,
    revoke: apiKeys.revokeApiKey,
  },
  organisations: {
    insert: organisations.insertOrganisation,
    ensure: organisations.ensureOrganisation,
    findByName: organisations.findOrganisationByName,
    findById: organisations.findOrganisationById,
    setWeight: organisations.setOrganisationWeight,
    weights: organisations.organisationWeights,
    findWithWeight: organisations.findOrganisationWithWeight,
  },
  progressRecords: {
    events: progressRecords.supplierEvents,
    processes: progressRecords.supplierProcesses,
    eventWriter: progressRecords.findEventWriter,
  },
  processes: {
    find: processes.findProcess,
    list: processes.listProcesses,
    loadStaged: processes.loadStagedPayload,
    storeStaged: processes.storeStagedPayload,
    promoteStaged: processes.promoteStagedPayload,
    markImported: processes.markImported,
    recordCreationJob: processes.recordCreationJob,
    recordCreationRefusal: processes.recordCreationRefusal,
    skip: skipProcess,
  },
  accounts: {
    find: accounts.findAccount,
    insert: accounts.insertAccount,
    validateRecords: accounts.validateRecords,
  },
  notes: {
    insert: notes.insertNotes,
    earliestByContent: notes.earliestByContent,
    listKeys: notes.listNoteKeys,
    find: notes.findNotes,
  },
  paymentInstructions: {
    findActive: paymentInstructions.findActiveInstruction,
    insertActive: paymentInstructions.insertActiveInstruction,
  },
  cohortPlans: {
    put: cohortPlans.putCohortPlan,
    find: cohortPlans.findCohortPlan,
    list: cohortPlans.listCohortPlans,
  },
  emailDeliveries: {
    findAccount: emailDeliveries.findMailAccount,
    claim: emailDeliveries.claimDelivery,
    markUncertain: emailDeliveries.markDeliveryUncertain,
    finish: emailDeliveries.finishDelivery,
    release: emailDeliveries.releaseDelivery,
  },
};
type Repositories = typeof repositories;

/**
 * The storage seam: every repository of the service, built once per process over one database connection (and,
 * for the progress counters, one Redis connection), so that what a repository remembers (journal and process
 * heads, suppliers, webhook audiences) is shared by everything the process runs. Decorated on the API app
 * (`app.storage`) and handed to every job (`ctx.storage`); nothing outside src/storage/ reaches the models.
 */
export type Storage = {
  suppliers: SupplierStore;
  apiKeys: Bound<Repositories['apiKeys']>;
  organisations: Bound<Repositories['organisations']>;
  /** The records a progress rebuild derives the counts from. */
  progressRecords: Bound<Repositories['progressRecords']>;
  processes: Bound<Repositories['processes']>;
  accounts: Bound<Repositories['accounts']>;
  notes: Bound<Repositories['notes']>;
  paymentInstructions: Bound<Repositories['paymentInstructions']>;
  emailDeliveries: Bound<Repositories['emailDeliveries']>;
  /** Cohort plans (one per supplier) and the cohort webhooks their transitions publish. */
  cohortPlans: Bound<Repositories['cohortPlans']>;
  cohortEvents: CohortEvents;
  /** The created accounts the post-import requests find, remembered once found. */
  createdAccounts: CreatedAccounts;
  journal: LedgerJournal;
  events: ProcessEventLog;
  webhooks: WebhookStore;
  /** What an account's timeline is read from, and the re-stages it records (`storage/timeline/`). */
  timeline: TimelineRecords;
  /** The cohorts' progress counters in Redis; null without Redis (then a rebuild derives them). */
  progress: ProgressCounters | null;
  /** One ping of the database, bounded by `timeoutMs` (readiness, a worker's check after an outage). */
  ping(timeoutMs: number): Promise<void>;
  /** Creates what is missing of the schema (`import-admin db init`): the database and its collections. */
  syncSchema(): Promise<{ database: string; collections: string[] }>;
  close(): Promise<void>;
};

export type StorageOptions = {
  config: Pick<Config, 'AUTH_CACHE_TTL_MS' | 'WEBHOOK_ACTIVATION_DELAY_MS' | 'QUEUE_PREFIX'>;
  /** Where the progress counters are kept (the API, the workers, the admin CLI); none: counts left to a rebuild. */
  redis?: RedisClient | null;
  log?: Pick<Logger, 'warn'> | null;
  /**
   * Whether event writers remember organisations' webhook endpoints for half of WEBHOOK_ACTIVATION_DELAY_MS
   * (the API and the workers; the admin CLI reads them for every event).
   */
  rememberWebhookAudience?: boolean;
};

/** Builds the storage object over an open database (see `openStorage`). */
export function createStorage(db: Database, options: StorageOptions): Storage {
  const { config, redis = null, log = null } = options;
  const progress = redis ? new ProgressCounters(redis, config.QUEUE_PREFIX, log) : null;
  const webhooks = createWebhookStore(db.models, {
    rememberAudienceMs: options.rememberWebhookAudience === false ? 0 : config.WEBHOOK_ACTIVATION_DELAY_MS,
  });
  return {
    suppliers: new SupplierStore(db.models, config.AUTH_CACHE_TTL_MS),
    apiKeys: bind(db, repositories.apiKeys),
    organisations: bind(db, repositories.organisations),
    progressRecords: bind(db, repositories.progressRecords),
    processes: bind(db, repositories.processes),
    accounts: bind(db, repositories.accounts),
    notes: bind(db, repositories.notes),
    paymentInstructions: bind(db, repositories.paymentInstructions),
    emailDeliveries: bind(db, repositories.emailDeliveries),
    cohortPlans: bind(db, repositories.cohortPlans),
    cohortEvents: new CohortEvents(db.models.ImportEvent, webhooks),
    createdAccounts: new CreatedAccounts(db.models),
    journal: new LedgerJournal(db.models.JournalEntry, depsOf(db.models)),
    events: new ProcessEventLog(
      db.models.ImportEvent,
      progress,
      (organisationId, type, occurredAt) => webhooks.audience.anySubscribed(organisationId, type, occurredAt),
      webhooks.outbox,
    ),
    webhooks,
    timeline: new TimelineRecords(db.models),
    progress,
    ping: (timeoutMs) => pingDatabase(db.conn, timeoutMs),
    syncSchema: async () => ({ database: db.conn.name, collections: await syncSchema(db.models) }),
    close: () => db.close(),
  };
}

/** Opens the database (creating what is missing of its schema) and builds the storage object over it. */
export async function openStorage(
  config: Parameters<typeof openDatabase>[0] & StorageOptions['config'],
  options: Omit<StorageOptions, 'config'> = {},
): Promise<Storage> {
  return createStorage(await openDatabase(config), { ...options, config });
}
