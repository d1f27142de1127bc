import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO, seedDemo } from '../../src/use-cases/admin/demo.js';
import { EXAMPLE_ACCOUNT } from '../../src/api/openapi/account-example.js';
import { examples } from '../../src/api/openapi/examples.js';
import { enabledVendors } from '../../src/vocabulary/payment-vendors.js';
import { startTestWorkers, until, type TestWorkers } from '../creation/support.js';
import { startTestApp, type TestApp } from '../support/app.js';
import {
  differences,
  GuideFormatError,
  parseGuideExamples,
  type GuideExample,
} from '../support/guide-examples.js';

// docs/api.md's examples, sent in the order of the guide to a service seeded as ./scripts/up.sh seeds it (the
// same seed code: organisation Demo Energy, supplier DEMO, team Migrations, the SIMULATED payment vendor on):
// each must be answered with its documented status and body, deliberate errors included. The marker
// convention is in test/support/guide-examples.ts.

const GUIDE = fileURLToPath(new URL('../../docs/api.md', import.meta.url));

let t: TestApp;
let workers: TestWorkers;
let apiKey: string;
let guide: GuideExample[];

beforeAll(async () => {
  guide = parseGuideExamples(await readFile(GUIDE, 'utf8'), dirname(GUIDE));
  // testConfig lists STRIPE,SIMULATED as up.sh does, and sets no Stripe key: only SIMULATED is enabled.
  t = await startTestApp({ env: { TEST_LABEL: 'docs-examples' } });
  const demo = await seedDemo(t.ops, 'http://127.0.0.1:3000', enabledVendors(t.config).enabled);
  expect(demo.payment_vendors).toEqual(['SIMULATED']);
  apiKey = demo.api_key;
  workers = await startTestWorkers(t.config);
});
afterAll(async () => {
  await workers?.stop();
  await t?.close();
});

/** The operation (method and path template) of the OpenAPI document a request goes to. */
async function operationsOf(requests: GuideExample['request'][]): Promise<string[]> {
  const doc = (await t.app.inject({ url: '/docs/json' })).json() as { paths: Record<string, object> };
  const templates = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => ({
      name: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase(),
      pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    })),
  );
  return requests.map((r) => {
    const found = templates.find((o) => o.method === r.method && o.pattern.test(r.path.split('?')[0]!));
    return found?.name ?? `${r.method} ${r.path} (not an operation of the document)`;
  });
}

describe('docs/api.md, sent in order after ./scripts/up.sh', () => {
  it('has runnable examples for every operation, all about the demo supplier, and v1 about one account', async () => {
    const doc = (await t.app.inject({ url: '/docs/json' })).json() as { paths: Record<string, object> };
    const all = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const covered = await operationsOf(guide.map((e) => e.request));
    expect(all.filter((o) => !covered.includes(o))).toEqual([]);
    expect(covered.filter((o) => !all.includes(o))).toEqual([]);

    for (const { request } of guide) {
      // The token, the catalogue and the list of the caller's suppliers are about no one supplier.
      const general = ['/v1/graphql/', '/v1/data-import/catalogue/', '/v2/data-import/import-suppliers/'];
      if (general.includes(request.path)) continue;
      const text = `${request.path} ${JSON.stringify(request.body ?? {})}`;
      const where = `line ${request.line}`;
      expect(text, where).toContain(DEMO.supplier);
      expect(text, where).not.toMatch(/ACME/);
      if (request.path.startsWith('/v1/data-import/'))
        for (const number of text.match(/ACC-\d{4}-\d{6}/g) ?? [EXAMPLE_ACCOUNT])
          expect(number, where).toBe(EXAMPLE_ACCOUNT);
    }
  });

  it('answers every example as documented', async () => {
    let token = '';
    const numbers = new Map<string, string>();
    // Every example is sent, even after one failed, so that a failure lists all the guide's differences.
    const failures: Array<{ example: string; answer: string; differences: string[] }> = [];
    for (const { request, answer } of guide) {
      let payload = request.body as Record<string, unknown> | undefined;
      // The token mutation's example names a placeholder key: the reader (and this test) uses up.sh's.
      if (request.path === '/v1/graphql/')
        payload = JSON.parse(
          JSON.stringify(payload).replaceAll(examples.token.variables.input.APIKey, apiKey),
        ) as Record<string, unknown>;
      const send = () =>
        t.app.inject({
          method: request.method,
          url: request.path,
          headers: request.path === '/v1/graphql/' ? {} : { authorization: `Token ${token}` },
          ...(payload ? { payload } : {}),
        });
      const compare = (res: Awaited<ReturnType<typeof send>>) => {
        const bound = new Map(numbers);
        const body: unknown = res.body === '' ? undefined : JSON.parse(res.body);
        const found =
          res.statusCode !== answer.status
            ? [`status ${res.statusCode}: ${res.body.slice(0, 1_000)}`]
            : answer.empty
              ? body === undefined
                ? []
                : [`documented an empty answer, got ${res.body.slice(0, 1_000)}`]
              : differences(answer.body, body, answer.varies, bound);
        return { found, bound, body };
      };
      const example = `line ${request.line}: ${request.method} ${request.path}`;
      // A task runs after its schedule: the status is read again until it is the documented one, as a reader would.
      const result = request.poll
        ? await until(
            async () => {
              const r = compare(await send());
              return r.found.length === 0 ? r : null;
            },
            `${example} answered as documented`,
            60_000,
          ).catch(async () => compare(await send()))
        : compare(await send());
      if (result.found.length > 0)
        failures.push({ example, answer: `line ${answer.line}`, differences: result.found });
      for (const [documented, actual] of result.bound) numbers.set(documented, actual);
      const obtained = (result.body as { data?: { obtainKrakenToken?: { token?: string } } } | undefined)
        ?.data?.obtainKrakenToken?.token;
      if (obtained) token = obtained;
    }
    expect(failures).toEqual([]);
    // Two accounts were created, v1's and v2's, each named by its own documented number.
    expect(new Set(numbers.values()).size).toBe(2);
  });
});

describe('the marker convention of the guide', () => {
  const parse = (text: string) => parseGuideExamples(text, '.');
  const block = (value: unknown) => ['```json', JSON.stringify(value), '```'].join('\n');

  it('pairs each request with its answer and reads their blocks, options and empty answers', () => {
    const examples = parse(
      [
        'Some prose.',
        '<!-- example request POST /v2/x/ -->',
        '',
        block({ a: 1 }),
        'Between them, prose.',
        '<!-- example answer 400 varies=created_at,token -->',
        block({ code: 'nope' }),
        '<!-- example request GET /v2/x/?limit=1 poll -->',
        '<!-- example answer 200 empty -->',
        'An illustration, not part of an example:',
        block({ illustration: true }),
      ].join('\n'),
    );
    expect(examples).toEqual([
      {
        request: { line: 2, method: 'POST', path: '/v2/x/', body: { a: 1 }, poll: false },
        answer: {
          line: 8,
          status: 400,
          body: { code: 'nope' },
          empty: false,
          varies: ['created_at', 'token'],
        },
      },
      {
        request: { line: 12, method: 'GET', path: '/v2/x/?limit=1', body: undefined, poll: true },
        answer: { line: 13, status: 200, body: undefined, empty: true, varies: [] },
      },
    ]);
  });

  it('refuses what it cannot read unambiguously', () => {
    const bad = [
      ['<!-- example request POST /x/ -->', '<!-- example answer 201 empty -->'],
      ['<!-- example request GET /x/ -->', block({}), '<!-- example answer 200 empty -->'],
      ['<!-- example request GET /x/ -->'],
      ['<!-- example answer 200 empty -->'],
      ['<!-- example request GET /x/ -->', '<!-- example request GET /y/ -->'],
      ['<!-- example request GET /x/ -->', '<!-- example answer 200 -->', 'prose', block({})],
      ['<!-- example request GET /x/ -->', '<!-- example answer 200 empty -->', block({})],
      ['<!-- example request GET /x/ sometimes -->', '<!-- example answer 200 empty -->'],
      ['<!-- example request GET /x/ -->', '<!-- example answer OK empty -->'],
      ['<!-- example request GET /x/ -->', '<!-- example answer 200 -->', '```json', '{"a": }', '```'],
      ['<!-- example request GET /x/-->'],
    ];
    for (const lines of bad)
      expect(() => parse(lines.join('\n')), lines.join(' | ')).toThrow(GuideFormatError);
  });
});

describe('comparing an answer with the documented one', () => {
  it('wants the same keys and values, except the keys that vary, compared by kind', () => {
    const none = new Map<string, string>();
    const documented = { status: 'PENDING', created_at: '2026-11-24T00:10:02Z', items: [{ n: 1 }] };
    expect(
      differences(documented, { ...documented, created_at: '2031-01-01T00:00:00Z' }, ['created_at'], none),
    ).toEqual([]);
    expect(
      differences(documented, { ...documented, created_at: 'yesterday' }, ['created_at'], none),
    ).toHaveLength(1);
    expect(
      differences(documented, { ...documented, created_at: '2031-01-01T00:00:00Z' }, [], none),
    ).toHaveLength(1);
    expect(differences(documented, { ...documented, status: 'ERRORED' }, ['created_at'], none)).toEqual([
      'status: documented "PENDING", got "ERRORED"',
    ]);
    expect(differences(documented, { ...documented, extra: 1 }, ['created_at'], none)).toEqual([
      'extra: answered 1, not documented',
    ]);
    expect(differences(documented, { ...documented, items: [{ n: 1 }, { n: 2 }] }, [], none)).toHaveLength(1);
  });

  it('binds a documented account number to the one the service gave, and holds it to it afterwards', () => {
    const numbers = new Map<string, string>();
    expect(differences({ n: 'A-F0F1DEBA' }, { n: 'A-12345678' }, [], numbers)).toEqual([]);
    expect(differences({ again: 'A-F0F1DEBA' }, { again: 'A-12345678' }, [], numbers)).toEqual([]);
    expect(differences({ again: 'A-F0F1DEBA' }, { again: 'A-87654321' }, [], numbers)).toHaveLength(1);
    expect(differences({ n: 'A-F0F1DEBA' }, { n: 'ACC-1' }, [], numbers)).toHaveLength(1);
  });
});
