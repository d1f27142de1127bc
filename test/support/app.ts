import type { FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Clock } from '../../src/auth/tokens.js';
import { Operations } from '../../src/use-cases/admin/operations.js';
import { createApiServer } from '../../src/api/http/instance.js';
import type { Config } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/storage/database.js';
import { testConfig } from './env.js';
import { enforceContract } from './openapi-contract.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Tests only: the database the app's storage is built on, to look at what was written. */
    db: Database;
  }
}

export type TestApp = { app: FastifyInstance; config: Config; ops: Operations; close: () => Promise<void> };

/** A real API (real database and Redis) driven with app.inject(); drops its database on close. */
export async function startTestApp(
  options: {
    env?: Record<string, string>;
    clock?: Clock;
    logStream?: DestinationStream;
    /** Adds test-only routes before the app is ready. */
    extend?: (app: FastifyInstance) => void;
  } = {},
): Promise<TestApp> {
  const config = testConfig(options.env);
  const db = await openDatabase(config);
  const app = await createApiServer(config, {
    clock: options.clock,
    logStream: options.logStream,
    database: db,
  });
  app.decorate('db', db);
  options.extend?.(app);
  await app.ready();
  // Every answer a test receives is checked against the served OpenAPI document.
  const contract = await enforceContract(app);
  const ops = new Operations(app.storage, config.API_KEY_HASH_SECRET);
  return {
    app,
    config,
    ops,
    close: async () => {
      contract.flush();
      await app.db.conn.dropDatabase();
      await app.close();
    },
  };
}

export const TOKEN_MUTATION = `mutation Obtain($input: ObtainJSONWebTokenInput!) {
  obtainKrakenToken(input: $input) { token payload refreshToken refreshExpiresIn }
}`;

export async function graphqlToken(app: FastifyInstance, input: Record<string, string>) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/graphql/',
    payload: { query: TOKEN_MUTATION, variables: { input } },
  });
  return {
    status: res.statusCode,
    body: res.json() as {
      data?: {
        obtainKrakenToken: {
          token: string;
          refreshToken: string;
          refreshExpiresIn: number;
          payload: Record<string, unknown>;
        };
      } | null;
      errors?: Array<{ message: string; extensions?: { errorCode?: string } }>;
    },
  };
}

/** An organisation with an API key, a token and (optionally) an `Ongoing` supplier. */
export async function createTenant(t: TestApp, orgName: string, supplierCode?: string) {
  const created = await t.ops.createOrganisation(orgName);
  if (supplierCode)
    await t.ops.createSupplier(supplierCode, orgName, {
      documentRoot: `migrations/${supplierCode.toLowerCase()}`,
    });
  const { body } = await graphqlToken(t.app, { APIKey: created.api_key });
  const token = body.data?.obtainKrakenToken.token;
  if (!token) throw new Error(`could not obtain a token: ${JSON.stringify(body)}`);
  return { apiKey: created.api_key, token, headers: { authorization: `Token ${token}` } };
}
