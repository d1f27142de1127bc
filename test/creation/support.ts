import { pino } from 'pino';
import { SMTPServer } from 'smtp-server';
import type { Config } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import type { Storage } from '../../src/storage/index.js';
import { startWorkers, type RunningWorkers } from '../../src/workers/runtime.js';
import type { QueueName } from '../../src/jobs/catalog.js';
import { validAccountPayload } from '../domain/fixtures.js';
import { createTenant, type TestApp } from '../support/app.js';

export const SUPPLIER = 'ACME_ENERGIA';
export const TEAM = 'Migrations Team';

/** A valid payload for the test supplier with its own external account number. */
export function accountPayload(external: string) {
  return { ...validAccountPayload(), import_supplier: SUPPLIER, external_account_number: external };
}

/** A tenant owning the test supplier, and an operations team. */
export async function setupTenant(t: TestApp, org = 'Acme Energía') {
  const tenant = await createTenant(t, org, SUPPLIER);
  await t.ops.ensureTeam(TEAM);
  return tenant;
}

export type Api = ReturnType<typeof apiFor>;

export function apiFor(t: TestApp, headers: Record<string, string>) {
  const stage = (payload: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/create-or-update/',
      headers,
      payload: payload as object,
    });
  const create = (external: string, extra: Record<string, unknown> = {}) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/data-import/account-import-process/process/',
      headers,
      payload: {
        external_account_number: external,
        import_supplier_code: SUPPLIER,
        operations_team_name: TEAM,
        ...extra,
      },
    });
  const status = (external: string) =>
    t.app.inject({
      method: 'GET',
      url: `/v1/data-import/account-transfer-status/${SUPPLIER}/${external}/`,
      headers,
    });
  const list = (kind: 'all' | 'pending' | 'imported', query = '') =>
    t.app.inject({
      method: 'GET',
      url: `/v1/data-import/${kind}-account-import-processes/${SUPPLIER}/${query}`,
      headers,
    });
  /** A post-import request (`notes/create/`, `transactions/create/`, …) about one account of the supplier. */
  const postImport = (external: string, path: string, payload: Record<string, unknown>) =>
    t.app.inject({
      method: 'POST',
      url: `/v1/data-import/${path}`,
      headers,
      payload: { import_supplier: SUPPLIER, external_account_number: external, ...payload },
    });
  return { stage, create, status, list, postImport };
}

export type TestWorkers = RunningWorkers & { db: Database; stop: () => Promise<void> };

/** In-process BullMQ workers on the app's database and queue prefix (a separate connection, like a worker pod). */
export async function startTestWorkers(config: Config, only?: readonly QueueName[]): Promise<TestWorkers> {
  const db = await openDatabase(config);
  const running = startWorkers({ config, db, log: pino({ level: config.LOG_LEVEL }) }, only);
  await Promise.all(running.workers.map((w) => w.waitUntilReady()));
  return {
    ...running,
    db,
    stop: async () => {
      await running.close();
      await db.close();
    },
  };
}

/** Polls `check` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function until<T>(
  check: () => Promise<T | null | undefined | false>,
  what: string,
  timeoutMs = 120_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** How many copies of each record an account has (read through the app's database and storage). */
export async function recordCounts(app: { db: Database; storage: Storage }, external: string) {
  const { models } = app.db;
  const accounts = await models.Account.find({
    importSupplier: SUPPLIER,
    externalAccountNumber: external,
  }).lean();
  const ids = accounts.map((a) => a._id);
  const journal = app.storage.journal;
  const histories = await Promise.all(ids.map((id) => journal.history(id)));
  const sum = (f: (h: NonNullable<(typeof histories)[number]>) => number) =>
    histories.reduce((n, h) => n + (h ? f(h) : 0), 0);
  return {
    accounts: accounts.length,
    ledgers: sum((h) => h.head.ledgers.length),
    transactions: sum((h) => h.transactions.length),
    notes: await models.Note.countDocuments({ accountId: { $in: ids } }),
    statements: sum((h) => h.statements.length),
    journalEntries: sum((h) => h.head.seq + 1),
  };
}

/** What `accountPayload()` creates: 2 ledgers, 3+2 and 2+1 transactions, 2 notes and its statements. */
export function expectedCounts() {
  const p = validAccountPayload();
  return {
    accounts: 1,
    ledgers: p.ledgers.length,
    transactions: p.ledgers.reduce(
      (n, l) =>
        n +
        (l.historical_statement_transactions?.length ?? 0) +
        (l.current_statement_transactions?.length ?? 0),
      0,
    ),
    notes: p.notes.length,
    statements: p.statements.length,
    journalEntries: 1,
  };
}

export type ReceivedMail = { from: string; to: string[]; raw: string };

/** A real SMTP server on a free port that keeps every message it accepts. */
/** A real SMTP server; with `refuseRecipients` it answers every recipient with a permanent 550. */
export async function startSmtpServer(options: { refuseRecipients?: boolean } = {}) {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (!options.refuseRecipients) return callback();
      const refused = Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 });
      callback(refused);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  const port = await new Promise<number>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve((server.server.address() as { port: number }).port));
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
