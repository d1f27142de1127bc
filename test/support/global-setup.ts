import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { resetContractOutput, summariseContract } from './openapi-contract.js';
import { startFerretDb, startRedisServer } from './processes.js';

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUrl: string;
    redisUrl: string;
    /** Seeds of a Redis Cluster every test app and worker uses instead of `redisUrl` ('' when none). */
    redisClusterNodes: string;
  }
}

/**
 * Uses MONGO_URL / REDIS_URL when given; else testcontainers when a container runtime runs; else local servers
 * (FerretDB on SQLite, or on PostgreSQL with TEST_POSTGRESQL_URL).
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

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  let mongoUrl = process.env.MONGO_URL;
  let redisUrl = process.env.REDIS_URL;
  const containers = (!mongoUrl || !redisUrl) && (await containerRuntimeAvailable());

  if (!mongoUrl) {
    if (containers) {
      const { MongoDBContainer } = await import('@testcontainers/mongodb');
      const mongo = await new MongoDBContainer('mongo:8').start();
      mongoUrl = mongo.getConnectionString();
      stops.push(async () => void (await mongo.stop()));
    } else {
      // TEST_POSTGRESQL_URL: the suite on FerretDB's PostgreSQL backend (the scaled topology's storage), on that
      // existing database; each test file still has a database (a PostgreSQL schema) of its own.
      const ferret = await startFerretDb({ postgresqlUrl: process.env.TEST_POSTGRESQL_URL || undefined });
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
  project.provide('mongoUrl', mongoUrl);
  // The cluster leg of CI: the same tests with every Redis client a cluster client (scripts/redis-cluster.sh).
  project.provide('redisClusterNodes', process.env.REDIS_CLUSTER_NODES ?? '');
  project.provide('redisUrl', redisUrl);
  resetContractOutput();
  return async () => {
    const contract = summariseContract();
    if (contract)
      console.info(
        `OpenAPI contract: ${contract.answers} answers checked, ${contract.exercised} of ${contract.operations} operations exercised` +
          (contract.unexercised.length ? ` (not: ${contract.unexercised.join(', ')})` : ''),
      );
    for (const stop of stops.reverse()) await stop();
  };
}
