import { randomBytes } from 'node:crypto';
import { Types } from 'mongoose';
import type { LightMyRequestResponse } from 'fastify';
import { accountIdFor } from '../../src/storage/records/created-accounts.js';
import { createTenant, startTestApp, type TestApp } from '../support/app.js';
import { dayAfter } from '../../src/domain/dates.js';

export type LedgerSeed = {
  code: string;
  lastStatementBalanceMinor: number;
  closingDate: string;
  balanceMinor?: number;
};

export type PostImportEnv = {
  t: TestApp;
  headers: Record<string, string>;
  supplier: string;
  post(url: string, payload: unknown): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
};

/** A real app with one organisation and an `Ongoing` supplier; `close` drops the database. */
export async function startPostImportEnv(
  label: string,
  env: Record<string, string> = {},
): Promise<PostImportEnv> {
  const t = await startTestApp({ env: { TEST_LABEL: label, ...env } });
  const supplier = `SUP_${label
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '')
    .slice(0, 20)}`;
  const { headers } = await createTenant(t, `Org ${label}`, supplier);
  return {
    t,
    headers,
    supplier,
    post: (url, payload) =>
      t.app.inject({ method: 'POST', url: `/v1/data-import/${url}`, headers, payload: payload as object }),
    close: () => t.close(),
  };
}

/**
 * A created account written straight through the models (Account + Ledger + the import process, with the
 * `_id`s the creation gives them), standing in for the creation worker in tests about post-import behaviour.
 */
export async function seedAccount(
  env: PostImportEnv,
  external: string,
  ledgers: LedgerSeed[] = [defaultLedger()],
) {
  const { models } = env.t.app.db;
  const supplier = await models.ImportSupplier.findOne({ code: env.supplier }).orFail();
  const number = `A-${randomBytes(4).toString('hex').toUpperCase()}`;
  const process = await models.AccountImportProcess.create({
    organisationId: supplier.organisationId,
    importSupplier: env.supplier,
    externalAccountNumber: external,
    stagedPayload: '{}',
    stagedAt: new Date(),
    krakenAccountNumber: number,
    accountCreatedAt: new Date(),
  });
  const account = await models.Account.create({
    _id: accountIdFor(process._id),
    number,
    organisationId: supplier.organisationId,
    importSupplier: env.supplier,
    externalAccountNumber: external,
    processId: process._id,
    operationsTeamId: new Types.ObjectId(),
    accountType: 'DOMESTIC',
    billingName: 'Cliente de Prueba',
  });
  await env.t.app.storage.journal.open(
    account._id,
    {
      ledgers: ledgers.map((l, position) => ({
        code: l.code,
        position,
        lastStatementBalanceMinor: l.lastStatementBalanceMinor,
        lastStatementClosingDate: l.closingDate,
        openPeriodStart: dayAfter(l.closingDate),
        balanceMinor: l.balanceMinor ?? l.lastStatementBalanceMinor,
        billingImportKey: null,
      })),
      keys: [],
      records: {},
    },
    new Date(),
  );
  return { account, number };
}

/** One ledger of an account as its journal holds it: its state and the transactions stored on it. */
export async function ledgerView(env: PostImportEnv, accountId: Types.ObjectId, code = 'ELECTRICITY') {
  const history = await env.t.app.storage.journal.history(accountId);
  const ledger = history?.head.ledgers.find((l) => l.code === code);
  if (!history || !ledger) throw new Error(`no ledger ${code} on account ${accountId.toHexString()}`);
  return {
    ...ledger,
    transactions: history.transactions.filter((t) => t.ledgerCode === code),
    billingDocuments: history.billingDocuments.filter((d) => d.ledgerCode === code),
    statements: history.statements,
  };
}

/** An account staged but never created: post-import endpoints must answer 404 for it. */
export async function seedStagedOnly(env: PostImportEnv, external: string) {
  const supplier = await env.t.app.db.models.ImportSupplier.findOne({ code: env.supplier }).orFail();
  await env.t.app.db.models.AccountImportProcess.create({
    organisationId: supplier.organisationId,
    importSupplier: env.supplier,
    externalAccountNumber: external,
    stagedPayload: '{}',
    stagedAt: new Date(),
  });
}

export function defaultLedger(overrides: Partial<LedgerSeed> = {}): LedgerSeed {
  return { code: 'ELECTRICITY', lastStatementBalanceMinor: -1500, closingDate: '2025-05-31', ...overrides };
}

export async function setSupplierStatus(env: PostImportEnv, status: 'Ongoing' | 'Paused' | 'Complete') {
  await env.t.ops.setSupplierStatus(env.supplier, status);
}

/** Polls `check` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function eventually<T>(
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 120_000,
  label = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${label} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
