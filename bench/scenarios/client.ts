import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { freePort, waitForPort } from '../../test/support/processes.js';
import { childEnv, startProcess } from '../../test/creation/processes.js';
import { accountTemplate, creationEnv, pool, SUPPLIER, TEAM } from '../creation-env.js';
import { round, type Scenario } from '../support.js';
import { Operations } from '../../src/use-cases/admin/operations.js';

const ACCOUNTS = Number(process.env.BENCH_CLIENT_ACCOUNTS ?? 2_000);
const CONCURRENCY = Number(process.env.BENCH_CLIENT_CONCURRENCY ?? 50);
const ROUNDS = Number(process.env.BENCH_CLIENT_ROUNDS ?? 3);
/** Input lengths of the memory runs: flat memory means the same peak at each. */
const MEMORY_LINES = (process.env.BENCH_CLIENT_MEMORY_LINES ?? '10000,100000').split(',').map(Number);
const root = resolve(import.meta.dirname, '../..');

/**
 * The migration client against a bare HTTP loop doing the same work (stage + create of realistic accounts,
 * 429s waited out) at the same concurrency, on the same service in the same run, alternating (bare, client,
 * bare, client) so that a drift of the machine touches both. Then the client's memory over files of each
 * length in MEMORY_LINES: `validate --offline` (no server, so the file's length is the only thing that grows),
 * its RSS sampled from /proc while it streams.
 */
const scenario: Scenario = {
  name: 'client',
  description:
    `import-client migrate vs a bare HTTP loop (stage + create, ${CONCURRENCY} in flight, realistic accounts, ` +
    `${ACCOUNTS} per run, alternating); the client's RSS over ${MEMORY_LINES.map((n) => n.toLocaleString('en')).join(' and ')} lines (validate --offline)`,
  async run(env) {
    const config = env.config({ ACCOUNT_CREATION_CONCURRENCY: '50' });
    const e = await creationEnv(config, { workers: false, payload: 'realistic' });
    const key = (await new Operations(e.app.storage, config.API_KEY_HASH_SECRET).createApiKey('Bench Org'))
      .api_key;
    const port = await freePort();
    const base = childEnv(config);
    const web = startProcess('web', { ...base, PORT: String(port), HOST: '127.0.0.1' });
    const worker = startProcess('worker', base);
    const dir = mkdtempSync(join(tmpdir(), 'bench-client-'));
    const template = e.template;
    try {
      await waitForPort(port);
      const baseUrl = `http://127.0.0.1:${port}`;
      const rounds: Record<string, number>[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        // The bare loop runs in this process: its CPU is this process's over the loop.
        const cpuBefore = process.cpuUsage();
        const bare = await bareLoop(baseUrl, e.headers, template, `B${r}`);
        const bareCpu = process.cpuUsage(cpuBefore);
        const client = await clientRun(baseUrl, key, template, `C${r}`, dir);
        rounds.push({
          bare_accounts_per_s: round(bare, 1),
          client_accounts_per_s: client.rate,
          client_wall_accounts_per_s: round(client.wall, 1),
          client_waits_asked_by_server: client.throttled,
          bare_cpu_ms_per_account: round((bareCpu.user + bareCpu.system) / 1000 / ACCOUNTS, 2),
          client_cpu_ms_per_account: round(client.cpuMsPerAccount, 2),
        });
      }
      const mean = (k: string) => rounds.reduce((a, r) => a + r[k]!, 0) / rounds.length;
      const memory: Record<string, unknown> = {};
      for (const lines of MEMORY_LINES) memory[`lines_${lines}`] = await memoryRun(dir, lines);
      return {
        accounts_per_run: ACCOUNTS,
        concurrency: CONCURRENCY,
        rounds,
        bare_accounts_per_s: round(mean('bare_accounts_per_s'), 1),
        client_accounts_per_s: round(mean('client_accounts_per_s'), 1),
        client_overhead_pct: round(
          (1 - mean('client_accounts_per_s') / mean('bare_accounts_per_s')) * 100,
          1,
        ),
        client_overhead_pct_with_startup: round(
          (1 - mean('client_wall_accounts_per_s') / mean('bare_accounts_per_s')) * 100,
          1,
        ),
        bare_cpu_ms_per_account: round(mean('bare_cpu_ms_per_account'), 2),
        client_cpu_ms_per_account: round(mean('client_cpu_ms_per_account'), 2),
        memory,
      };
    } finally {
      await Promise.all([web.stop(), worker.stop()]);
      await e.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default scenario;

/** Stage + create over keep-alive HTTP, `CONCURRENCY` in flight, 429s waited out: accounts/s. */
async function bareLoop(baseUrl: string, headers: Record<string, string>, template: object, tag: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const post = (path: string, body: string) =>
    new Promise<number>((resolvePromise, reject) => {
      const req = request(
        `${baseUrl}${path}`,
        { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () => resolvePromise(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const externals = Array.from({ length: ACCOUNTS }, (_, i) => `${tag}-${i}`);
  const started = performance.now();
  await pool(externals, CONCURRENCY, async (ext) => {
    const staged = await post(
      '/v1/data-import/account-import-process/create-or-update/',
      JSON.stringify({ ...template, import_supplier: SUPPLIER, external_account_number: ext }),
    );
    if (staged !== 201) throw new Error(`stage ${staged}`);
    for (;;) {
      const status = await post(
        '/v1/data-import/account-import-process/process/',
        JSON.stringify({
          external_account_number: ext,
          import_supplier_code: SUPPLIER,
          operations_team_name: TEAM,
        }),
      );
      if (status === 201) return;
      if (status !== 429) throw new Error(`create ${status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  agent.destroy();
  return ACCOUNTS / ((performance.now() - started) / 1000);
}

/**
 * The same work through `import-client migrate` (`options`: its concurrency options, by default this scenario's
 * fixed `CONCURRENCY`): its own accounts/s (summary) and including its start-up, the share of its requests the
 * service refused, and what its concurrency did.
 */
export async function clientRun(
  baseUrl: string,
  apiKey: string,
  template: object,
  tag: string,
  dir: string,
  options: { accounts?: number; args?: string[] } = {},
) {
  const accounts = options.accounts ?? ACCOUNTS;
  const args = options.args ?? ['--concurrency', String(CONCURRENCY), '--no-adaptive'];
  const file = join(dir, `${tag}.jsonl`);
  const out = createWriteStream(file);
  for (let i = 0; i < accounts; i++)
    out.write(
      JSON.stringify({ ...template, import_supplier: SUPPLIER, external_account_number: `${tag}-${i}` }) +
        '\n',
    );
  await new Promise<void>((r) => out.end(() => r()));
  const report = join(dir, `report-${tag}`);
  const started = performance.now();
  const code = await new Promise<number | null>((resolvePromise) => {
    const proc = spawn(
      process.execPath,
      [
        // As bin/import-client runs it (its young generation capped).
        '--max-semi-space-size=16',
        '--import',
        'tsx',
        'src/cli/client/cli.ts',
        'migrate',
        file,
        '--team',
        TEAM,
        ...args,
        '--quiet',
        '--report',
        report,
        '--state',
        join(dir, `${tag}.sqlite`),
      ],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          IMPORT_BASE_URL: baseUrl,
          IMPORT_API_KEY: apiKey,
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    proc.on('exit', resolvePromise);
  });
  const wall = accounts / ((performance.now() - started) / 1000);
  if (code !== 0) throw new Error(`import-client exited ${code}`);
  const summary = JSON.parse(readFileSync(join(report, 'summary.json'), 'utf8')) as {
    accounts_per_s: number;
    server_throttled: number;
    cpu_seconds: number;
    concurrency: Record<string, number | string>;
  };
  return {
    rate: summary.accounts_per_s,
    wall,
    throttled: summary.server_throttled,
    cpuMsPerAccount: (summary.cpu_seconds * 1000) / accounts,
    concurrency: summary.concurrency,
  };
}

/** `validate --offline` over a gzipped file of `count` accounts; RSS sampled every 250 ms. */
async function memoryRun(dir: string, count: number) {
  const file = join(dir, `memory-${count}.jsonl.gz`);
  const template = accountTemplate('minimal');
  async function* lines() {
    for (let i = 0; i < count; i++)
      yield (
        JSON.stringify({ ...template, import_supplier: SUPPLIER, external_account_number: `M-${i}` }) + '\n'
      );
  }
  await pipeline(Readable.from(lines()), createGzip({ level: 1 }), createWriteStream(file));
  const samples: { t: number; rss_mb: number }[] = [];
  const started = performance.now();
  const code = await new Promise<number | null>((resolvePromise) => {
    const proc = spawn(
      process.execPath,
      [
        '--max-semi-space-size=16',
        '--import',
        'tsx',
        'src/cli/client/cli.ts',
        'validate',
        file,
        '--offline',
        '--quiet',
        '--report',
        join(dir, `report-memory-${count}`),
      ],
      {
        cwd: root,
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const timer = setInterval(() => {
      try {
        const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
        const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
        if (kb > 0) samples.push({ t: (performance.now() - started) / 1000, rss_mb: kb / 1024 });
      } catch {
        /* the process has exited */
      }
    }, 250);
    proc.on('exit', (c) => {
      clearInterval(timer);
      resolvePromise(c);
    });
  });
  if (code !== 0) throw new Error(`validate --offline exited ${code}`);
  const at = (fraction: number) =>
    samples[Math.min(samples.length - 1, Math.floor(samples.length * fraction))]?.rss_mb ?? NaN;
  return {
    lines: count,
    seconds: round((performance.now() - started) / 1000, 1),
    rss_mb_at_10pct: round(at(0.1), 1),
    rss_mb_at_50pct: round(at(0.5), 1),
    rss_mb_at_90pct: round(at(0.9), 1),
    rss_mb_peak: round(Math.max(...samples.map((s) => s.rss_mb)), 1),
  };
}
