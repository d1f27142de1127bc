#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { loadConfig, type Config } from '../../config.js';
import { openStorage, type Storage } from '../../storage/index.js';
import { OperatorError, Operations } from '../../use-cases/admin/operations.js';
import { supplierStatuses } from '../../vocabulary/supplier-statuses.js';
import { DEFAULT_REGION, regionNames } from '../../domain/region/names.js';
import { seedDemo } from '../../use-cases/admin/demo.js';
import { enabledVendors } from '../../vocabulary/payment-vendors.js';
import { WebhookOperations } from '../../use-cases/admin/webhooks.js';
import { producerConnection, type RedisClient } from '../../infra/redis.js';
import { FairShareOperations } from '../../use-cases/admin/fair-share.js';
import { PlanOperations } from '../../use-cases/admin/cutover.js';

/**
 * `import-admin`: the operators' CLI. Prints one JSON document on stdout; on error a one-line message on
 * stderr and a non-zero exit code.
 */
let storage: Storage | undefined;
let redis: RedisClient | undefined;
/**
 * Runs one command over the storage, opened once for it; with `counters`, over the cohort progress counters
 * too (Redis), for the commands that change or rebuild them. Webhook audiences are read for every event: the
 * CLI remembers none of an organisation's endpoints.
 */
async function withStorage<T>(
  fn: (storage: Storage, config: Config) => Promise<T>,
  counters = false,
): Promise<void> {
  const config = loadConfig();
  if (counters) redis = producerConnection(config, { enableOfflineQueue: true });
  storage = await openStorage(config, { redis, rememberWebhookAudience: false });
  const result = await fn(storage, config);
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
}
const withOps = <T>(fn: (ops: Operations, config: Config) => Promise<T>, counters = false) =>
  withStorage((s, config) => fn(new Operations(s, config.API_KEY_HASH_SECRET), config), counters);
const withCounters = <T>(fn: (ops: Operations) => Promise<T>) => withOps(fn, true);
const withShares = <T>(fn: (shares: FairShareOperations) => Promise<T>) =>
  withStorage((s, config) => fn(new FairShareOperations(s, redis!, config)), true);
const withPlans = <T>(fn: (plans: PlanOperations) => Promise<T>) =>
  withStorage((s, config) => fn(new PlanOperations(s, redis!, config)), true);
const withWebhooks = <T>(fn: (hooks: WebhookOperations) => Promise<T>) =>
  withStorage((s, config) => fn(new WebhookOperations(s, config)));

const program = new Command('import-admin')
  .description('Operator commands for the account migration import service')
  .exitOverride()
  .configureOutput({ writeErr: (s) => process.stderr.write(s) });

const org = program.command('org').description('organisations');
org
  .command('create <name>')
  .description('create an organisation and its first API key (shown once)')
  .action((name: string) => withOps((ops) => ops.createOrganisation(name)));
org
  .command('set-weight <name> <weight>')
  .description(
    "set the organisation's weight (1-1000, default 1) in the fair share of the creation limit; effective " +
      'at once, or within 5 s once Redis is back',
  )
  .action((name: string, weight: string) => withShares((shares) => shares.setWeight(name, weight)));
org
  .command('show <name>')
  .description(
    "the organisation's weight and its part of the creation limit now (slots in use, share, waiting)",
  )
  .action((name: string) => withShares((shares) => shares.show(name)));

const apiKey = program.command('api-key').description('organisation API keys');
apiKey
  .command('create')
  .requiredOption('--org <name>', 'organisation name')
  .description('create another API key (shown once)')
  .action((opts: { org: string }) => withOps((ops) => ops.createApiKey(opts.org)));
apiKey
  .command('revoke <idOrPrefix>')
  .description('revoke a key by id or prefix; tokens minted from it stop working')
  .action((id: string) => withOps((ops) => ops.revokeApiKey(id)));

const supplier = program.command('supplier').description('import suppliers');
supplier
  .command('create <code>')
  .requiredOption('--org <name>', 'owning organisation')
  .addOption(new Option('--status <status>', 'initial status').choices(supplierStatuses).default('Ongoing'))
  .option('--document-root <path>', 'root of document paths in object storage', '')
  .option('--document-bucket <bucket>', 'bucket (default: DOCUMENT_BUCKET)')
  .option('--send-migration-email', 'e-mail the account holder when an account is created', false)
  .addOption(
    new Option('--region <region>', 'validation profile').choices(regionNames).default(DEFAULT_REGION),
  )
  .option('--default-team <name>', 'the team v2 schedules use when the payload names none')
  .action(
    (
      code: string,
      o: {
        org: string;
        status: string;
        documentRoot: string;
        documentBucket?: string;
        sendMigrationEmail: boolean;
        region: string;
        defaultTeam?: string;
      },
    ) =>
      withOps((ops) =>
        ops.createSupplier(code, o.org, {
          status: o.status,
          documentRoot: o.documentRoot,
          documentBucket: o.documentBucket,
          sendMigrationEmail: o.sendMigrationEmail,
          region: o.region,
          defaultTeam: o.defaultTeam,
        }),
      ),
  );
supplier
  .command('set-status <code> <status>')
  .description(`set status (${supplierStatuses.join('|')})`)
  .action((code: string, status: string) => withOps((ops) => ops.setSupplierStatus(code, status)));
supplier
  .command('set-default-team <code> <team>')
  .description('the team v2 schedules use when the account payload names none')
  .action((code: string, team: string) => withOps((ops) => ops.setSupplierDefaultTeam(code, team)));
supplier.command('show <code>').action((code: string) => withOps((ops) => ops.showSupplier(code)));

const webhook = program.command('webhook').description('webhook subscriptions and deliveries');
webhook
  .command('add')
  .requiredOption('--org <name>', 'organisation')
  .requiredOption('--url <url>', 'https:// endpoint')
  .option('--events <types>', 'comma-separated event types (default: all)')
  .description('subscribe an endpoint; prints its signing secret once')
  .action((o: { org: string; url: string; events?: string }) =>
    withWebhooks((hooks) =>
      hooks.add(
        o.org,
        o.url,
        (o.events ?? '')
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean),
      ),
    ),
  );
webhook
  .command('list')
  .requiredOption('--org <name>', 'organisation')
  .action((o: { org: string }) => withWebhooks((hooks) => hooks.list(o.org)));
webhook
  .command('remove <id>')
  .description('stop sending to an endpoint')
  .requiredOption('--org <name>', 'organisation the endpoint belongs to')
  .action((id: string, o: { org: string }) => withWebhooks((hooks) => hooks.remove(o.org, id)));
webhook
  .command('deliveries')
  .requiredOption('--org <name>', 'organisation')
  .option('--failed', 'only failed deliveries', false)
  .action((o: { org: string; failed: boolean }) =>
    withWebhooks((hooks) => hooks.deliveries(o.org, { failed: o.failed })),
  );
webhook
  .command('replay <deliveryId>')
  .description('send a delivery again (same webhook-id)')
  .requiredOption('--org <name>', 'organisation the delivery belongs to')
  .action((id: string, o: { org: string }) => withWebhooks((hooks) => hooks.replay(o.org, id)));

program
  .command('team')
  .description('operations teams')
  .command('create <name>')
  .action((name: string) => withOps((ops) => ops.createTeam(name)));

program
  .command('account')
  .description('account import processes')
  .command('skip <code> <externalAccountNumber>')
  .description('mark an import process skipped: staging and creation refuse it')
  .action((code: string, external: string) => withCounters((ops) => ops.skipAccount(code, external)));

program
  .command('progress')
  .description('cohort progress counters')
  .command('rebuild <code>')
  .description(
    "rebuild a supplier's progress counters from its import processes and events; prints whether they had " +
      'drifted (and where). Safe while the cohort is active; the workers also do it by themselves when the ' +
      'counts may have been lost (a flush, restart or failover of Redis)',
  )
  .action((code: string) => withCounters((ops) => ops.rebuildProgress(code)));

const plan = program.command('plan').description("suppliers' cohort plans (declared with PUT …/plan/)");
plan
  .command('show <code>')
  .description("the supplier's cohort plan and its state: paused or not, why, the counts")
  .action((code: string) => withPlans((plans) => plans.show(code)));
plan
  .command('pause <code>')
  .description("pause the supplier's cohort: its v2 tasks wait, its v1 creates are refused")
  .option('--reason <text>', 'why (at most 200 characters), shown with the pause')
  .action((code: string, o: { reason?: string }) => withPlans((plans) => plans.pause(code, o.reason)));
plan
  .command('resume <code>')
  .description('approve the canary, or resume after the breaker or an operator pause')
  .action((code: string) => withPlans((plans) => plans.resume(code)));

program
  .command('db')
  .description('the database')
  .command('init')
  .description(
    'create every collection and index, then exit (each process does it at boot too); run once before the ' +
      'processes of a deployment with several FerretDB over one PostgreSQL start (see the README)',
  )
  .action(() => withStorage((s) => s.syncSchema()));

program
  .command('demo')
  .description(
    'create (idempotently) a demo organisation, supplier DEMO and team Migrations, with a new API key',
  )
  .option('--base-url <url>', 'where the API listens, for the printed curl', 'http://127.0.0.1:3000')
  .action((o: { baseUrl: string }) =>
    withOps((ops, config) => seedDemo(ops, o.baseUrl, enabledVendors(config).enabled)),
  );

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode === 0 ? 0 : 2;
  } else {
    const message =
      err instanceof OperatorError || err instanceof Error ? err.message.split('\n')[0] : String(err);
    process.stderr.write(`error: ${message}\n`);
    process.exitCode = err instanceof OperatorError ? 1 : 3;
  }
} finally {
  await closeRedis(redis);
  await storage?.close();
}

/**
 * Closes the Redis client once the commands it still holds are answered (a Redis Cluster client may still be
 * connecting when a command ends early, on an error: a disconnect then rejects what it queued, and Node prints
 * each rejection as a stack trace after the command's one line), within 2 s.
 */
async function closeRedis(client: RedisClient | undefined): Promise<void> {
  if (!client) return;
  const quit = client.quit().then(
    () => undefined,
    () => undefined,
  );
  await Promise.race([quit, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
  client.disconnect();
}
