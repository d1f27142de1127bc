import { readFile } from 'node:fs/promises';
import {
  ACCOUNT_EXAMPLE_PATH,
  SCHEDULE_EXAMPLE_PATH,
  VALIDATED_EXAMPLE_PATH,
} from '../../scripts/gen-api-examples.js';
import { validatedAccountExample } from '../../src/api/openapi/answers.js';
import { EXAMPLE_V2_ACCOUNT, examples } from '../../src/api/openapi/examples.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api/openapi/document.js';
import { EXAMPLE_ACCOUNT, EXAMPLE_SUPPLIER, EXAMPLE_TEAM } from '../../src/api/openapi/account-example.js';
import { DEMO, seedDemo } from '../../src/use-cases/admin/demo.js';
import { enabledVendors } from '../../src/vocabulary/payment-vendors.js';
import { defaultCatalogueValues } from '../../src/vocabulary/catalogue.js';
import { startTestWorkers, type TestWorkers } from '../creation/support.js';
import { graphqlToken, startTestApp, type TestApp } from '../support/app.js';
import { ContractCheck } from '../support/openapi-contract.js';
import { errorCatalogue } from '../../src/api/http/errors.js';

type Schema = { properties?: Record<string, unknown>; anyOf?: Schema[] };
type Media = { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown }> };
type Operation = {
  operationId?: string;
  tags?: string[];
  summary?: string;
  parameters?: Array<{ name: string; in: string; example?: unknown }>;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
};
type Document = {
  servers?: Array<{ url: string }>;
  tags?: Array<{ name: string }>;
  paths: Record<string, Record<string, Operation>>;
};

let t: TestApp;
let workers: TestWorkers;
let tenant: { apiKey: string; headers: Record<string, string> };
let document: Document;

beforeAll(async () => {
  // The examples are about the demo data ./scripts/up.sh seeds, with the SIMULATED vendor it enables.
  expect([EXAMPLE_SUPPLIER, EXAMPLE_TEAM]).toEqual([DEMO.supplier, DEMO.team]);
  t = await startTestApp({
    env: {
      TEST_LABEL: 'openapi',
      PAYMENT_VENDORS: 'STRIPE,SIMULATED',
      CATALOGUE_EXTRA: JSON.stringify({ reason: ['SOLAR_FEED_IN_CREDIT'] }),
    },
  });
  const demo = await seedDemo(t.ops, 'http://127.0.0.1:3000', enabledVendors(t.config).enabled);
  const { body } = await graphqlToken(t.app, { APIKey: demo.api_key });
  tenant = {
    apiKey: demo.api_key,
    headers: { authorization: `Token ${body.data!.obtainKrakenToken.token}` },
  };
  workers = await startTestWorkers(t.config);
  const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
  expect(res.statusCode).toBe(200);
  document = res.json();
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

const operations = () =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation })),
  );

function requestExample(operation: Operation): unknown {
  const media = operation.requestBody?.content['application/json'];
  return media?.example ?? Object.values(media?.examples ?? {})[0]?.value;
}

describe('the OpenAPI document at /docs/json', () => {
  it('is the document the linter checks (built without a database or Redis)', async () => {
    expect(await buildOpenApiDocument()).toEqual(document);
  });

  it('lists its tags in workflow order, sets servers, and documents every operation with its errors', () => {
    expect(document.tags?.map((tag) => tag.name)).toEqual([
      'authentication',
      'accounts',
      'post-import',
      'status',
      'v2',
      'reference',
    ]);
    expect(document.servers?.length).toBeGreaterThan(0);
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
      expect(operation.tags?.length, where).toBe(1);
      expect(operation.summary, where).toBeTruthy();
      if (operation.requestBody) expect(requestExample(operation), where).toBeTypeOf('object');
      const statuses = Object.keys(operation.responses);
      expect(
        statuses.some((s) => s.startsWith('4')),
        where,
      ).toBe(true);
      if (path === '/v1/graphql/') continue;
      expect(statuses, where).toEqual(expect.arrayContaining(['401', '500']));
      for (const status of statuses.filter((s) => /^[45]/.test(s))) {
        const schema = operation.responses[status]!.content?.['application/json']?.schema;
        // The error body, or (transaction import 400) either it or the transaction import error.
        const variants = schema?.anyOf ?? [schema];
        expect(
          variants.some((v) => v?.properties && 'detail' in v.properties && 'code' in v.properties),
          `${where} ${status}`,
        ).toBe(true);
      }
    }
  });

  it('gives every answer with a JSON body a real example that matches its schema, never a generated placeholder', () => {
    const contract = new ContractCheck(document);
    const placeholders = (value: unknown): boolean =>
      value === 'string' ||
      (typeof value === 'object' && value !== null && Object.values(value).some(placeholders));
    let errorExamples = 0;
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const media = response.content?.['application/json'];
        if (!media) continue;
        const where = `${operation.operationId} ${status}`;
        expect(media.example, where).toBeDefined();
        expect(placeholders(media.example), where).toBe(false);
        expect(contract.problemOf(method.toUpperCase(), path, status, media.example), where).toBeNull();
        if (Number(status) < 400 || path === '/v1/graphql/') continue;
        errorExamples++;
        // An error example is an answer of that status: its code is one the status answers with…
        const example = media.example as Record<string, unknown>;
        if (typeof example.code === 'string')
          expect(errorCatalogue[example.code as keyof typeof errorCatalogue]?.status, where).toBe(
            Number(status),
          );
        else expect(example.status, where).toBe('TRANSACTION_IMPORT_ERROR');
        // …and only a 400 has more than detail and code (request_id on a 5xx): never errors or account numbers.
        if (status !== '400')
          expect(
            Object.keys(example).filter((k) => !['detail', 'code', 'request_id'].includes(k)),
            where,
          ).toEqual([]);
      }
    }
    expect(errorExamples).toBeGreaterThan(100);
  });

  it('declares closed enumerations as enum and describes the open lists with their default values', () => {
    const json = JSON.stringify(document);
    expect(json).toContain('"enum":["CHARGE","CREDIT","PAYMENT","REPAYMENT","SUPPLY_CHARGE"]');
    expect(json).toContain('"enum":["GAS","ELECTRICITY"]');
    expect(json).toContain('"enum":["ITEM_BASED","PERIOD_BASED"]');
    expect(json).toContain(`by default ${defaultCatalogueValues.payment_type.join(', ')}.`);
    expect(json).toContain(`by default ${defaultCatalogueValues.account_type.join(', ')}.`);
  });
});

describe('every request example of the document, sent to the running service in workflow order', () => {
  const expected: Record<string, number> = {
    obtainToken: 200,
    validateAccount: 200,
    stageAccount: 201,
    createAccount: 201,
    importNotes: 201,
    importTransactions: 201,
    importHistoricalBillingDocuments: 201,
    importHistoricalStatements: 201,
    createPaymentInstruction: 201,
    getAccountImportStatus: 200,
    listAllAccountImportProcesses: 200,
    listPendingAccountImportProcesses: 200,
    listImportedAccountImportProcesses: 200,
    validateScheduledAccount: 200,
    scheduleAccountCreation: 201,
    getAccountImportProcess: 200,
    cancelScheduledCreation: 200,
    listAccountImportEvents: 200,
    listImportSuppliers: 200,
    getCohortProgressPerMinute: 200,
    getCohortProgress: 200,
    listCohortAccounts: 200,
    putCohortPlan: 200,
    getCohortPlan: 200,
    pauseCohortPlan: 200,
    resumeCohortPlan: 200,
    getAccountReconciliation: 200,
    reconcileAccounts: 200,
    getAccountTimeline: 200,
    getCatalogue: 200,
  };

  it('is accepted, each operation answering its documented success', async () => {
    const seen: string[] = [];
    // The document lists the paths in workflow order: each example builds on the ones before it.
    for (const { path, method, operation } of operations()) {
      const id = operation.operationId!;
      let url = path;
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'path') url = url.replace(`{${parameter.name}}`, String(parameter.example));
      }
      // The drill-down needs the status it opens.
      if (id === 'listCohortAccounts') url += '?status=PROCESSED';
      // Here the v2 example account's task was cancelled: the v1 one is the created account to reconcile.
      if (id === 'getAccountReconciliation') url = url.replace(EXAMPLE_V2_ACCOUNT, EXAMPLE_ACCOUNT);
      let payload = requestExample(operation) as Record<string, unknown> | undefined;
      // The token mutation's example carries a placeholder key; this organisation's real one replaces it.
      if (id === 'obtainToken') payload = { ...payload, variables: { input: { APIKey: tenant.apiKey } } };
      // The example's task starts at once; in an hour here, so that the cancel after it finds it waiting.
      if (id === 'scheduleAccountCreation') {
        const start = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
        const params = (payload as { task_params: object }).task_params;
        payload = { ...payload, task_params: { ...params, schedule_window_start: start } };
      }
      const res = await t.app.inject({
        method: method.toUpperCase() as 'GET' | 'POST' | 'PUT' | 'DELETE',
        url,
        headers: tenant.headers,
        ...(payload ? { payload } : {}),
      });
      expect(`${id} ${res.statusCode}`, res.body.slice(0, 2_000)).toBe(`${id} ${expected[id]}`);
      expect(Object.keys(operation.responses), id).toContain(String(res.statusCode));
      seen.push(id);

      const body = res.body ? res.json() : undefined;
      if (id === 'obtainToken') expect(body.data.obtainKrakenToken.token).toMatch(/^ey/);
      if (id === 'createAccount') expect(body.kraken_account_number).toMatch(/^A-[0-9A-F]{8}$/);
      if (id === 'importTransactions')
        expect(body.results.map((r: { status: string }) => r.status)).toEqual([
          'TRANSACTION_ADDED_TO_ACCOUNT',
          'TRANSACTION_ADDED_TO_ACCOUNT',
        ]);
      if (id === 'getAccountImportStatus') expect(body.status).toBe('COMPLETED');
      if (id === 'listImportedAccountImportProcesses') expect(body).toHaveLength(1);
      if (id === 'getCatalogue') expect(body.reason).toContain('SOLAR_FEED_IN_CREDIT');
      if (id === 'getAccountImportProcess') expect(body.status).toBe('PENDING');
      if (id === 'cancelScheduledCreation') expect(body.status).toBe('CANCELLED');
      if (id === 'listAccountImportEvents')
        expect(body.map((e: { event: string }) => e.event)).toEqual([
          'EVENT_ACCOUNT_IMPORT_PROCESS_CREATED',
          'EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED',
          'EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED',
        ]);
    }
    expect(seen).toEqual(Object.keys(expected));
  });
});

describe('GET /v1/data-import/catalogue/', () => {
  it('answers the values in force: the defaults, then what CATALOGUE_EXTRA adds', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/data-import/catalogue/',
      headers: tenant.headers,
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.reason).toEqual([...defaultCatalogueValues.reason, 'SOLAR_FEED_IN_CREDIT']);
    expect(body.account_type).toEqual(defaultCatalogueValues.account_type);
    expect(Object.keys(body).sort()).toEqual(Object.keys(defaultCatalogueValues).sort());
  });

  it('needs a token like every data-import route', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/data-import/catalogue/' });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('not_authenticated');
  });
});

const readGuide = () => readFile(new URL('../../docs/api.md', import.meta.url), 'utf8');

/** Every ```json block of the guide, parsed (a block that is not JSON fails the test). */
async function guideJsonBlocks(): Promise<unknown[]> {
  const guide = await readGuide();
  return [...guide.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
}

describe('docs/api.md', () => {
  it('covers every operation of the OpenAPI document: its method and path, and its operationId', async () => {
    const guide = await readGuide();
    const missing = operations()
      .filter(
        ({ path, method, operation }) =>
          !guide.includes(`${method.toUpperCase()} ${path}`) ||
          !guide.includes(`\`${operation.operationId}\``),
      )
      .map(({ path, method }) => `${method.toUpperCase()} ${path}`);
    expect(missing).toEqual([]);
  });
});

describe('the examples of docs/', () => {
  it('are JSON, and show every request example of the OpenAPI document', async () => {
    const blocks = await guideJsonBlocks();
    expect(blocks.length).toBeGreaterThan(20);
    const shown = (value: unknown) => blocks.some((block) => JSON.stringify(block) === JSON.stringify(value));
    // The v2 schedule example wraps the account example (docs/examples/account.json): its task parameters are shown.
    const { account, params, scheduleAccount, ...requests } = examples;
    void account;
    void params;
    expect(shown(scheduleAccount.task_params), 'scheduleAccount.task_params').toBe(true);
    for (const [name, request] of Object.entries(requests)) expect(shown(request), name).toBe(true);
  });

  it('show every success answer example of the OpenAPI document (docs/api.md and docs/examples/)', async () => {
    const blocks = [
      ...(await guideJsonBlocks()),
      JSON.parse(await readFile(VALIDATED_EXAMPLE_PATH, 'utf8')) as unknown,
    ];
    const shown = (value: unknown) => blocks.some((block) => JSON.stringify(block) === JSON.stringify(value));
    const missing = operations().flatMap(({ operation }) =>
      Object.entries(operation.responses)
        .filter(([status, r]) => Number(status) < 300 && r.content?.['application/json'])
        .filter(([, r]) => !shown(r.content!['application/json']!.example))
        .map(([status]) => `${operation.operationId} ${status}`),
    );
    expect(missing).toEqual([]);
  });

  it('docs/examples/ holds the account example, what validate-account answers for it and the v2 schedule example (npx tsx scripts/gen-api-examples.ts)', async () => {
    expect(JSON.parse(await readFile(ACCOUNT_EXAMPLE_PATH, 'utf8'))).toEqual(examples.account);
    expect(JSON.parse(await readFile(VALIDATED_EXAMPLE_PATH, 'utf8'))).toEqual(validatedAccountExample());
    expect(JSON.parse(await readFile(SCHEDULE_EXAMPLE_PATH, 'utf8'))).toEqual(examples.scheduleAccount);
  });
});
