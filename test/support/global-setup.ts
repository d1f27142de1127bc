import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { resetContractOutput, summariseContract } from './openapi-contract.js';
import { randomBytes } from 'node:crypto';
import { createPostgresDatabase, startFerretDb, startRedisCluster, startRedisServer } from './processes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUrl: string;
    redisUrl: string;
    /** Seeds of a Redis Cluster every test app and worker uses instead of `redisUrl` ('' when none). */
    redisClusterNodes: string;
    /** MONGO_MAX_POOL_SIZE of every test app and process ('' for the default). */
    mongoMaxPoolSize: string;
  }
}

/**
 * Uses MONGO_URL / REDIS_URL / REDIS_CLUSTER_NODES when given; else testcontainers when a container runtime
 * runs; else local servers. The scaled topology (scripts/test-scaled.sh): `TEST_DATABASE=postgresql` runs
 * FerretDB on its PostgreSQL backend against a fresh database (`TEST_POSTGRES_URL`, default
 * postgres://postgres@127.0.0.1:5432/postgres, names the server; the database is dropped afterwards), and
 * `TEST_REDIS=cluster` starts a Redis Cluster (scripts/redis-cluster.sh; on `TEST_REDIS_CLUSTER_PORT`, else
 * six free ports) that every test app and worker uses, stopped afterwards. `TEST_FERRETDB_PORT` fixes the
 * port of the FerretDB started here.
 */
async function containerRuntimeAvailable(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await Promise.race([
      getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no runtime')), 5_000)),
    ]);
    return true;
  } catch {
    return false;
  }
}

function choice(name: string, allowed: readonly string[]): string {
  const value = process.env[name] ?? allowed[0]!;
  if (!allowed.includes(value)) throw new Error(`${name}=${value}: expected one of ${allowed.join(', ')}`);
  return value;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  // The run's port claims (see claimPorts): the worker processes inherit the variable.
  const claims = mkdtempSync(join(tmpdir(), 'test-ports-'));
  process.env.TEST_PORT_CLAIMS = claims;
  stops.push(async () => rmSync(claims, { recursive: true, force: true }));
  const database = choice('TEST_DATABASE', ['sqlite', 'postgresql']);
  const redisKind = choice('TEST_REDIS', ['single', 'cluster']);
  const ferretPort = process.env.TEST_FERRETDB_PORT ? Number(process.env.TEST_FERRETDB_PORT) : undefined;
  let mongoUrl = process.env.MONGO_URL;
  let redisUrl = process.env.REDIS_URL;
  let clusterNodes = process.env.REDIS_CLUSTER_NODES ?? '';
  let mongoMaxPoolSize = '';
  const containers = (!mongoUrl || !redisUrl) && database === 'sqlite' && (await containerRuntimeAvailable());
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop();
  };

  try {
    if (!mongoUrl && database === 'postgresql') {
      const server = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
      const pg = await createPostgresDatabase(server, `citest_${randomBytes(4).toString('hex')}`);
      stops.push(pg.drop);
      // One FerretDB for every test file's apps and processes. A stock FerretDB v1 update holds a PostgreSQL
      // connection while it waits for another (the project's build: only findAndModify), so commands in flight
      // across all its clients stay below its pool (README, "A server database"): 60 connections, and each test
      // app or process at most MONGO_MAX_POOL_SIZE=6 (some eight at a time). A pool of 20 with the default 50 per
      // process deadlocked under test/v2/limit.test.ts. A PostgreSQL others use needs max_connections above 60
      // plus theirs.
      const url = new URL(pg.url);
      url.searchParams.set('pool_max_conns', '60');
      mongoMaxPoolSize = '6';
      const ferret = await startFerretDb({ postgresqlUrl: url.toString(), port: ferretPort });
      mongoUrl = ferret.url;
      stops.push(ferret.stop);
      console.info(`test setup: FerretDB on PostgreSQL (database ${pg.name}) at ${ferret.url}`);
    }
    if (!clusterNodes && redisKind === 'cluster') {
      const basePort = process.env.TEST_REDIS_CLUSTER_PORT
        ? Number(process.env.TEST_REDIS_CLUSTER_PORT)
        : undefined;
      const cluster = await startRedisCluster({ basePort });
      clusterNodes = cluster.seeds;
      stops.push(cluster.stop);
      console.info(`test setup: Redis Cluster at ${cluster.seeds}`);
    }
    if (!mongoUrl) {
      if (containers) {
        const { MongoDBContainer } = await import('@testcontainers/mongodb');
        const mongo = await new MongoDBContainer('mongo:8').start();
        mongoUrl = mongo.getConnectionString();
        stops.push(async () => void (await mongo.stop()));
      } else {
        const ferret = await startFerretDb({ port: ferretPort });
        mongoUrl = ferret.url;
        stops.push(ferret.stop);
      }
    }
    if (!redisUrl) {
      if (containers) {
        const { RedisContainer } = await import('@testcontainers/redis');
        const redis = await new RedisContainer('redis:7').start();
        redisUrl = redis.getConnectionUrl();
        stops.push(async () => void (await redis.stop()));
      } else {
        const redis = await startRedisServer();
        redisUrl = redis.url;
        stops.push(redis.stop);
      }
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  project.provide('mongoUrl', mongoUrl!);
  // The scaled leg of CI: the same tests with every Redis client a cluster client (scripts/redis-cluster.sh).
  // Tests that stop and start a Redis of their own still get the single `redisUrl`.
  project.provide('redisClusterNodes', clusterNodes);
  project.provide('redisUrl', redisUrl!);
  project.provide('mongoMaxPoolSize', mongoMaxPoolSize);
  resetContractOutput();
  return async () => {
    const contract = summariseContract();
    if (contract)
      console.info(
        `OpenAPI contract: ${contract.answers} answers checked, ${contract.exercised} of ${contract.operations} operations exercised` +
          (contract.unexercised.length ? ` (not: ${contract.unexercised.join(', ')})` : ''),
      );
    await stopAll();
  };
}
