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

/** Creates every collection and declared index; run at boot by each process (idempotent). */
export async function syncIndexes(models: Models): Promise<void> {
  // The staged payloads' model is registered on first use elsewhere; its collection is created here too.
  const all = [...Object.values(models), stagedPayloadModel(models.Account.db)];
  for (const model of all) {
    // Every collection, those without a secondary index too: all of them exist once one process has started
    // (FerretDB instances sharing one PostgreSQL database each cache the collections they found, see README).
    await model.createCollection();
    await model.createIndexes();
  }
}
