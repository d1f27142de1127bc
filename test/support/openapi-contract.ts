import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { resolve } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/**
 * The contract test: every answer a test receives through `app.inject` is checked against the OpenAPI
 * document the app itself serves (`/docs/json`): the status is listed for the operation, the media type is the
 * documented one (or there is no body where none is documented), and the body matches the schema. A mismatch
 * throws in the test that made the request, naming the operation and the body's path. Schemas are compiled
 * once per operation and status (Ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses).
 */

type Operation = {
  method: string;
  template: string;
  pattern: RegExp;
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  pointer: string;
};

/** Not API operations: health, metrics, the docs, the operators' dashboard and the cohort page's files. */
const UNDOCUMENTED = [
  /^\/healthz$/,
  /^\/readyz$/,
  /^\/metrics$/,
  /^\/docs(\/|$)/,
  /^\/admin\//,
  /^\/cohorts(\/|$)/,
];
/** Documented once with its trailing slash, like every path (the router ignores it); GraphiQL is not an API. */
const aliases = (path: string) => (path === '/v1/graphql' ? '/v1/graphql/' : path);

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

const outputDir = resolve(import.meta.dirname, '../../test-output/openapi-contract');

export class ContractCheck {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  private readonly operations: Operation[] = [];
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly seen: string[] = [];

  constructor(document: { paths: Record<string, Record<string, unknown>> }) {
    addFormats.default(this.ajv);
    this.ajv.addSchema(document, 'openapi');
    for (const [template, item] of Object.entries(document.paths)) {
      const pattern = new RegExp(
        `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`,
      );
      for (const [method, op] of Object.entries(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        this.operations.push({
          method: method.toUpperCase(),
          template,
          pattern,
          responses: (op as Operation).responses ?? {},
          pointer: `#/paths/${escapePointer(template)}/${method}/responses`,
        });
      }
    }
  }

  check(options: InjectOptions | string, res: LightMyRequestResponse): void {
    const method = (typeof options === 'string' ? 'GET' : (options.method ?? 'GET')).toUpperCase();
    const url = typeof options === 'string' ? options : (options.url ?? options.path ?? '/');
    const path = aliases(String(typeof url === 'string' ? url : url.pathname).split('?')[0]!);
    if (UNDOCUMENTED.some((re) => re.test(path))) return;
    // GraphQL over GET (queries only) is served but only the token mutation's POST is documented.
    if (method === 'GET' && path === '/v1/graphql/') return;
    const op = this.operations.find((o) => o.method === method && o.pattern.test(decodeURI(path)));
    const name = op ? `${op.method} ${op.template}` : `${method} ${path}`;
    const fail = (what: string) => {
      throw new Error(`OpenAPI contract: ${name} answered ${res.statusCode}: ${what}`);
    };
    // A path no documented route has: an unknown URL (Fastify's 404) or a route hidden from the document (a
    // test's own); test/api/openapi.test.ts checks that every route of the service is documented.
    if (!op) return;
    const status = String(res.statusCode);
    const key = [status, `${status[0]}XX`, 'default'].find((k) => k in op.responses);
    if (!key) return fail(`status not documented (documented: ${Object.keys(op.responses).join(', ')})`);
    const content = op.responses[key]!.content;
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim();
    if (!content || Object.keys(content).length === 0) {
      if (res.body.length > 0) fail(`a body (${type || 'no media type'}) where none is documented`);
      this.record(name, status);
      return;
    }
    if (!(type in content))
      return fail(`media type "${type || 'none'}", documented: ${Object.keys(content).join(', ')}`);
    if (type === 'application/json' && content[type]!.schema !== undefined) {
      let body: unknown;
      try {
        body = JSON.parse(res.body);
      } catch {
        return fail('the body is not JSON');
      }
      const problem = this.validate(op, key, body);
      if (problem) fail(problem);
    }
    this.record(name, status);
  }

  /**
   * Why `body` is not a valid JSON answer of the operation `METHOD template` with `status` (a key of its
   * responses), or null when it is. Also for the document's own answer examples.
   */
  problemOf(method: string, template: string, status: string, body: unknown): string | null {
    const op = this.operations.find((o) => o.method === method && o.template === template);
    if (!op) return `no operation ${method} ${template}`;
    if (!op.responses[status]?.content?.['application/json']) return `no JSON answer ${status}`;
    return this.validate(op, status, body);
  }

  private validate(op: Operation, key: string, body: unknown): string | null {
    const ref = `${op.pointer}/${escapePointer(key)}/content/${escapePointer('application/json')}/schema`;
    let validate = this.compiled.get(ref);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi${ref}` });
      this.compiled.set(ref, validate);
    }
    if (validate(body)) return null;
    const e = validate.errors![0]!;
    return `body at "${e.instancePath || '/'}" ${e.message}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ''}`;
  }

  private record(name: string, status: string): void {
    this.seen.push(`${name} ${status}`);
  }

  /** Appends what was checked to test-output/openapi-contract/ (the global teardown sums it up). */
  flush(): void {
    mkdirSync(outputDir, { recursive: true });
    const operations = this.operations.map((o) => `${o.method} ${o.template}`);
    writeFileSync(resolve(outputDir, 'operations.json'), JSON.stringify(operations));
    if (this.seen.length === 0) return;
    appendFileSync(resolve(outputDir, `answers-${process.pid}.txt`), this.seen.splice(0).join('\n') + '\n');
  }
}

/** Makes every `app.inject(options)` of a test app check its answer against the app's own document. */
export async function enforceContract(app: FastifyInstance): Promise<ContractCheck> {
  const inject = app.inject.bind(app);
  const doc = await inject({ url: '/docs/json' });
  const contract = new ContractCheck(doc.json());
  const checked = ((options?: InjectOptions | string) => {
    if (options === undefined) return inject();
    return inject(options).then((res) => {
      contract.check(options, res);
      return res;
    });
  }) as FastifyInstance['inject'];
  app.inject = checked;
  return contract;
}

/** Starts a run: forgets an earlier run's counts. */
export function resetContractOutput(): void {
  rmSync(outputDir, { recursive: true, force: true });
}

/**
 * What the suite checked: answers by operation and status, and the operations no test exercised. Written to
 * test-output/openapi-contract/summary.json.
 */
export function summariseContract(): {
  answers: number;
  operations: number;
  exercised: number;
  unexercised: string[];
} | null {
  if (!existsSync(resolve(outputDir, 'operations.json'))) return null;
  const operations = JSON.parse(readFileSync(resolve(outputDir, 'operations.json'), 'utf8')) as string[];
  const byAnswer = new Map<string, number>();
  for (const file of readdirSync(outputDir).filter((f) => f.startsWith('answers-'))) {
    for (const line of readFileSync(resolve(outputDir, file), 'utf8').split('\n').filter(Boolean))
      byAnswer.set(line, (byAnswer.get(line) ?? 0) + 1);
  }
  const exercised = new Set([...byAnswer.keys()].map((a) => a.split(' ').slice(0, 2).join(' ')));
  const summary = {
    answers: [...byAnswer.values()].reduce((a, b) => a + b, 0),
    operations: operations.length,
    exercised: operations.filter((o) => exercised.has(o)).length,
    unexercised: operations.filter((o) => !exercised.has(o)),
    by_answer: Object.fromEntries([...byAnswer].sort()),
  };
  writeFileSync(resolve(outputDir, 'summary.json'), JSON.stringify(summary, null, 2));
  return summary;
}
