import type { Connection, Model } from 'mongoose';
import { accountImportProcessSchema } from './account-import-process.js';
import { accountSchema } from './account.js';
import { emailDeliverySchema } from './email-delivery.js';
import { journalEntrySchema } from './journal-entry.js';
import { journalHeadSchema } from './journal-head.js';
import { noteSchema } from './note.js';
import { paymentInstructionSchema } from './payment-instruction.js';
import { apiKeySchema } from './api-key.js';
import { importSupplierSchema } from './import-supplier.js';
import { importEventSchema } from './import-event.js';
import { webhookDeliverySchema, webhookDeliveryStepSchema } from './webhook-delivery.js';
import { webhookEndpointSchema } from './webhook-endpoint.js';
import { webhookDueSchema, webhookOutboxSchema } from './webhook-outbox.js';
import { operationsTeamSchema } from './operations-team.js';
import { organisationSchema } from './organisation.js';
import { stagedPayloadModel } from './staged-payload.js';
import { cohortPlanSchema } from './cohort-plan.js';
import { accountStepSchema } from './account-step.js';

function register(conn: Connection) {
  return {
    Organisation: conn.model('Organisation', organisationSchema),
    ApiKey: conn.model('ApiKey', apiKeySchema),
    ImportSupplier: conn.model('ImportSupplier', importSupplierSchema),
    OperationsTeam: conn.model('OperationsTeam', operationsTeamSchema),
    AccountImportProcess: conn.model('AccountImportProcess', accountImportProcessSchema),
    Account: conn.model('Account', accountSchema),
    JournalEntry: conn.model('JournalEntry', journalEntrySchema),
    JournalHead: conn.model('JournalHead', journalHeadSchema),
    Note: conn.model('Note', noteSchema),
    PaymentInstruction: conn.model('PaymentInstruction', paymentInstructionSchema),
    EmailDelivery: conn.model('EmailDelivery', emailDeliverySchema),
    ImportEvent: conn.model('ImportEvent', importEventSchema),
    WebhookEndpoint: conn.model('WebhookEndpoint', webhookEndpointSchema),
    WebhookDelivery: conn.model('WebhookDelivery', webhookDeliverySchema),
    WebhookDeliveryStep: conn.model('WebhookDeliveryStep', webhookDeliveryStepSchema),
    WebhookOutbox: conn.model('WebhookOutbox', webhookOutboxSchema),
    WebhookDue: conn.model('WebhookDue', webhookDueSchema),
    CohortPlan: conn.model('CohortPlan', cohortPlanSchema),
    AccountStep: conn.model('AccountStep', accountStepSchema),
  };
}

export type Models = ReturnType<typeof register>;

const byConnection = new WeakMap<Connection, Models>();

/** The models bound to one connection (tests open one connection per database). */
export function modelsFor(conn: Connection): Models {
  let models = byConnection.get(conn);
  if (!models) {
    models = register(conn);
    byConnection.set(conn, models);
  }
  return models;
}

/**
 * Creates every collection and every declared index that is missing; run at boot by each process (idempotent),
 * and once by `import-admin db init` before the processes of a FerretDB-over-PostgreSQL deployment start. Each
 * collection is created explicitly, one at a time, also those without a declared index: so when this returns
 * the whole schema exists, and no collection is first created later by whichever process happens to write to
 * it. It reads first (the collections, each one's indexes) and writes only what is missing, so a boot against
 * a complete schema, the usual case, writes nothing (on FerretDB over PostgreSQL every index creation request
 * rewrites the collection's metadata, even when the index exists). On FerretDB only the unique indexes are made
 * (`syncIndexes`).
 */
export async function syncSchema(models: Models): Promise<string[]> {
  const conn = models.Organisation.db;
  // The staged payloads' model is registered on first use (storage/import-processes.ts); its collection is part
  // of the schema all the same.
  const all = [...Object.values(models), stagedPayloadModel(conn)];
  const listed = await conn.db!.listCollections({}, { nameOnly: true }).toArray();
  const existing = new Set(listed.map((c) => c.name));
  const uniqueOnly = await answersReadsByIdOnly(conn);
  const names: string[] = [];
  for (const model of all) {
    const name = model.collection.collectionName;
    try {
      if (!existing.has(name)) await model.createCollection();
      await syncIndexes(model, uniqueOnly);
    } catch (err) {
      throw staleFerretDbSchema(err, name) ?? err;
    }
    names.push(name);
  }
  return names;
}

/**
 * Whether the server is FerretDB (its `buildInfo` says so). FerretDB v1 answers a read from an index only when
 * it is by `_id`: on SQLite any other filter reads the whole table, and on PostgreSQL the equality it pushes
 * down is a JSON containment (`@>`), which its indexes (B-trees of one field each) cannot serve; a sort is
 * never pushed down. An index there serves uniqueness, or nothing.
 */
async function answersReadsByIdOnly(conn: Connection): Promise<boolean> {
  const info = await conn.db!.admin().command({ buildInfo: 1 });
  return typeof info.ferretdbVersion === 'string';
}

/**
 * Creates the model's declared indexes that are missing. With `uniqueOnly` (FerretDB, see above) only the
 * unique ones, which guarantee what the code relies on (one account per process, one delivery per event and
 * endpoint, ...), and an index that is not unique is dropped where an earlier version made it: it would cost
 * every insert and update of the collection (about 30% more of FerretDB's CPU for a small document's insert,
 * measured) and serve no read. On MongoDB every declared index is made, those that serve reads included (the
 * sweep's outbox and due times, an organisation's deliveries, an account's notes by content).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any of the schema's models
async function syncIndexes(model: Model<any>, uniqueOnly: boolean): Promise<void> {
  const { toCreate } = await model.diffIndexes({ indexOptionsToCreate: true });
  const missing = toCreate as unknown as [Record<string, 1 | -1>, { unique?: boolean }][];
  if (!uniqueOnly) {
    if (missing.length > 0) await model.createIndexes();
    return;
  }
  for (const [keys, options] of missing)
    if (options.unique) await model.collection.createIndex(keys, options);
  for (const index of await model.listIndexes())
    if (index.name !== '_id_' && !index.unique)
      // Another process booting at the same time may have dropped it first.
      await model.collection.dropIndex(index.name as string).catch((err: { code?: number }) => {
        if (err.code !== INDEX_NOT_FOUND) throw err;
      });
}

const INDEX_NOT_FOUND = 27;

/**
 * FerretDB v1 over PostgreSQL reads the list of collections once, at its first request: when another FerretDB
 * on the same PostgreSQL database created a collection after that, this one does not know it, tries to create
 * its table again and fails with PostgreSQL's "relation … already exists". Said so, with the remedy.
 */
function staleFerretDbSchema(err: unknown, collection: string): Error | undefined {
  if (!(err instanceof Error) || !/SQLSTATE 42P07|relation "[^"]*" already exists/.test(err.message)) return;
  return new Error(
    `the database server does not know the collection "${collection}" although its PostgreSQL table exists: a ` +
      'FerretDB over PostgreSQL that read the collections before another FerretDB created them. Restart that ' +
      'FerretDB (and see the README: the schema is created once, with `import-admin db init`, before the ' +
      'FerretDBs of the pods start)',
    { cause: err },
  );
}
