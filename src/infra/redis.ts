import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';

/**
 * The one place that builds Redis connections. A single Redis (`REDIS_URL`) by default; with
 * `REDIS_CLUSTER_NODES` every connection of the service (queues, workers, queue events, job results, slots,
 * locks, webhook state, the dashboard) is an ioredis Cluster instead. Key names live in `redis-keys.ts`.
 */
export type RedisClient = Redis | Cluster;

export type RedisSettings = {
  REDIS_URL: string;
  /** Seeds of a Redis Cluster (empty: the single Redis at `REDIS_URL`). */
  REDIS_CLUSTER_NODES: ReadonlyArray<{ host: string; port: number }>;
};

export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** How often every Cluster client reads the slot map again (one CLUSTER SLOTS per client). */
const CLUSTER_SLOTS_REFRESH_MS = 2_000;

/**
 * ioredis's Cluster with a `connect()` that always settles. ioredis leaves the promise of `connect()` pending for
 * good when the cluster's ready check fails (CLUSTER INFO says `cluster_state:fail`, as it does while a failover
 * is under way): the client reconnects by itself and becomes ready, but that first promise is never settled.
 * BullMQ awaits it when it reconnects a worker's blocking connection, and that worker then takes no job again
 * (seen in the failover test: a queue's workers idle for minutes beside a waiting job). Here the promise also
 * settles when the client becomes ready, and fails when it ends. Duplicates (BullMQ's blocking connections are
 * duplicates of the worker's) are of this class too.
 */
class SettlingCluster extends Cluster {
  private readonly seeds: ClusterNode[];

  constructor(startupNodes: ClusterNode[], options: ClusterOptions) {
    super(startupNodes, options);
    this.seeds = startupNodes;
  }

  override connect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Status events are emitted a tick after the change: one still on its way from before this call is
      // told apart by the status it no longer matches.
      const onReady = () => {
        if (this.status === 'ready') settle(resolve);
      };
      const onEnd = () => {
        if (this.status === 'end') settle(() => reject(new Error('Connection is closed.')));
      };
      const settle = (then: () => void) => {
        this.off('ready', onReady);
        this.off('end', onEnd);
        then();
      };
      this.on('ready', onReady);
      this.on('end', onEnd);
      super.connect().then(
        () => settle(resolve),
        (err: unknown) => settle(() => reject(err as Error)),
      );
    });
  }

  override duplicate(
    overrideStartupNodes: ClusterNode[] = [],
    overrideOptions: ClusterOptions = {},
  ): Cluster {
    const seeds = overrideStartupNodes.length > 0 ? overrideStartupNodes : this.seeds;
    return new SettlingCluster(seeds, { ...this.options, ...overrideOptions });
  }
}

function connect(settings: RedisSettings, options: RedisOptions): RedisClient {
  if (settings.REDIS_CLUSTER_NODES.length === 0) return new Redis(settings.REDIS_URL, options);
  const { enableOfflineQueue, retryStrategy, ...redisOptions } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions,
    enableOfflineQueue,
    clusterRetryStrategy: retryStrategy ? (times) => retryStrategy(times) : undefined,
    // A failover or a resharding moves slots: commands follow the new owner rather than fail.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: 2_000,
    // Reads the slot map again every so often (ioredis's documented default of 5 s is not applied: unset, it
    // never does). After a failover, a client whose last read came before the replica's promotion would
    // otherwise go on sending that slot's commands to the dead master for good: a worker connection (no
    // retry limit) holds them forever in that node's queue, and nothing else makes it read the map again.
    // A read that drops the dead node fails what it held back to the cluster client, which sends it again (to
    // the new master once the map names it) or, after its tries, fails it to the caller: either way it is heard.
    slotsRefreshInterval: CLUSTER_SLOTS_REFRESH_MS,
  };
  return new SettlingCluster([...settings.REDIS_CLUSTER_NODES], clusterOptions);
}

/**
 * A producer-side connection: commands fail at once while Redis is down (no offline queue), so requests
 * answer 503 quickly instead of hanging; ioredis keeps reconnecting in the background. Never for blocking
 * commands. No auto-pipelining: it defers every command to the next turn of the event loop and builds a
 * pipeline (with every BullMQ script defined on the connection) per turn, which cost about 0.1 ms per round
 * trip at low load and gained no measurable throughput at 50 in flight (benches creation-latency and
 * creation-throughput).
 */
export function producerConnection(settings: RedisSettings, extra: RedisOptions = {}): RedisClient {
  return connect(settings, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 1_000),
    ...extra,
  });
}

/** A worker-side connection: BullMQ workers block on Redis and must retry forever. */
export function workerConnection(settings: RedisSettings, extra: RedisOptions = {}): RedisClient {
  return connect(settings, {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    ...extra,
  });
}

/** A client that never connects: the app built without Redis (the OpenAPI document for tooling). */
export function unconnectedClient(): Redis {
  return new Redis({ lazyConnect: true });
}

/** A one-off connection for a command-line run: waits a little for Redis, then gives up. */
export function oneOffConnection(settings: RedisSettings): RedisClient {
  return connect(settings, { maxRetriesPerRequest: 3, connectTimeout: 5_000 });
}

/**
 * Whether an error says Redis could not serve a command (rather than refused it): a connection down or not
 * ready, the retries of a command used up, or a Redis Cluster between owners of a slot (a failover: the
 * cluster down, a master gone, redirections exhausted, a replica not yet promoted). Such a command may be
 * sent again once Redis is back: callers answer 503 with Retry-After, never 500.
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as Error & { code?: unknown }).code;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH)$/.test(code))
    return true;
  return /Stream isn't writeable|enableOfflineQueue|Connection is closed|Cluster isn't ready|Cluster is ended|max retries per request|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available|Command timed out|^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING|READONLY) |ECONNREFUSED|ECONNRESET|ETIMEDOUT/i.test(
    err.message,
  );
}

/**
 * Whether Redis can serve the service: a single Redis answers PING; a cluster says `cluster_state:ok` and
 * every master answers (a cluster whose failed master has no replica left to promote is not ok).
 */
export async function redisReady(client: RedisClient): Promise<void> {
  if (!isCluster(client)) {
    await client.ping();
    return;
  }
  const masters = client.nodes('master');
  if (masters.length === 0) throw new Error('no cluster master known');
  const info = await masters[0]!.cluster('INFO');
  if (!/cluster_state:ok/.test(String(info))) throw new Error('cluster state is not ok');
  await Promise.all(masters.map((node) => node.ping()));
}

type ConnectionLog = Pick<Logger, 'warn' | 'info'>;

/**
 * Logs a connection's failures once per outage: the first error after it was last ready (ioredis retries
 * every second or so and would repeat it), and its return. Only the error's message and code: the URL,
 * which may hold a password, is never logged.
 */
export function logConnectionErrors(connection: RedisClient, log: ConnectionLog, name: string): void {
  let failing = false;
  connection.on('error', (err: Error & { code?: string }) => {
    if (failing) return;
    failing = true;
    log.warn({ connection: name, err: err.message, code: err.code }, 'redis connection error');
  });
  connection.on('ready', () => {
    if (!failing) return;
    failing = false;
    log.info({ connection: name }, 'redis connection restored');
  });
}
