import type { Connection } from 'mongoose';
import { accountImportProcessSchema } from './account-import-process.js';
import { accountSchema } from './account.js';
import { emailDeliverySchema } from './email-delivery.js';
import { journalEntrySchema } from './journal-entry.js';
import { noteSchema } from './note.js';
import { paymentInstructionSchema } from './payment-instruction.js';
import { apiKeySchema } from './api-key.js';
import { importSupplierSchema } from './import-supplier.js';
import { importEventSchema } from './import-event.js';
import { webhookDeliverySchema } from './webhook-delivery.js';
import { webhookEndpointSchema } from './webhook-endpoint.js';
import { operationsTeamSchema } from './operations-team.js';
import { organisationSchema } from './organisation.js';
import { stagedPayloadModel } from './staged-payload.js';

function register(conn: Connection) {
  return {
    Organisation: conn.model('Organisation', organisationSchema),
    ApiKey: conn.model('ApiKey', apiKeySchema),
    ImportSupplier: conn.model('ImportSupplier', importSupplierSchema),
    OperationsTeam: conn.model('OperationsTeam', operationsTeamSchema),
    AccountImportProcess: conn.model('AccountImportProcess', accountImportProcessSchema),
    Account: conn.model('Account', accountSchema),
    JournalEntry: conn.model('JournalEntry', journalEntrySchema),
    Note: conn.model('Note', noteSchema),
    PaymentInstruction: conn.model('PaymentInstruction', paymentInstructionSchema),
    EmailDelivery: conn.model('EmailDelivery', emailDeliverySchema),
    ImportEvent: conn.model('ImportEvent', importEventSchema),
    WebhookEndpoint: conn.model('WebhookEndpoint', webhookEndpointSchema),
    WebhookDelivery: conn.model('WebhookDelivery', webhookDeliverySchema),
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
 * Creates every collection (those without secondary indexes too: `staged_payloads`) and every declared
 * index; run at boot by each process (idempotent). Then checks that the server lists every collection: on
 * FerretDB's PostgreSQL backend each FerretDB process keeps its own copy of the collection list, loaded once,
 * so one started before another created the schema would answer reads of those collections with nothing.
 * Such a process fails here, at boot, instead of serving empty reads (see the README: the schema is created
 * once, `import-admin init-db`, before the pods and their FerretDB sidecars start).
 */
export async function syncIndexes(models: Models): Promise<void> {
  const conn = models.AccountImportProcess.db;
  const all = [...Object.values(models), stagedPayloadModel(conn)];
  for (const model of all) {
    await model.createCollection();
    await model.createIndexes();
  }
  const listed = new Set(
    (await conn.db!.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name),
  );
  const missing = all.map((m) => m.collection.collectionName).filter((name) => !listed.has(name));
  if (missing.length > 0) throw new SchemaNotVisibleError(missing);
}

/** The database server does not list collections this process created or expects (a stale FerretDB). */
export class SchemaNotVisibleError extends Error {
  constructor(readonly missing: string[]) {
    super(
      `the database server does not list the collections ${missing.join(', ')}: with FerretDB on a shared ` +
        'PostgreSQL, run `import-admin init-db` once before starting the FerretDB sidecars, then restart this ' +
        "pod's FerretDB",
    );
    this.name = 'SchemaNotVisibleError';
  }
}
