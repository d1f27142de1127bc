import { LRUCache } from 'lru-cache';
import { Types } from 'mongoose';
import type { Config } from '../config.js';
import type { Database } from '../infra/mongo.js';
import { findOperationsTeamId, findSupplierRow, operationsTeamExists } from '../storage/suppliers.js';

/**
 * The supplier and team lookups of account creation, remembered per worker process. Teams are created by
 * operators and never renamed or removed, so a found team is remembered for good. Suppliers change status
 * (Paused, Complete) through the operator CLI: a remembered supplier is used for `AUTH_CACHE_TTL_MS` at most,
 * the same bound the API pods apply to suppliers and keys (0 turns remembering off).
 */

type SupplierRow = {
  code: string;
  status: string;
  region?: string | null;
  sendMigrationEmail?: boolean | null;
  documentBucket?: string | null;
  documentRoot?: string | null;
};

export type CreationLookups = {
  supplier(code: string, organisationId: Types.ObjectId): Promise<SupplierRow | null>;
  teamExists(id: string): Promise<boolean>;
  /** The id of the team with this name, or null. */
  teamIdByName(name: string): Promise<string | null>;
};

const byDatabase = new WeakMap<Database, CreationLookups>();

export function creationLookups(db: Database, config: Pick<Config, 'AUTH_CACHE_TTL_MS'>): CreationLookups {
  let lookups = byDatabase.get(db);
  if (!lookups) {
    lookups = makeLookups(db, config.AUTH_CACHE_TTL_MS);
    byDatabase.set(db, lookups);
  }
  return lookups;
}

function makeLookups(db: Database, ttlMs: number): CreationLookups {
  const { models } = db;
  const suppliers =
    ttlMs > 0 ? new LRUCache<string, { row: SupplierRow | null }>({ max: 1_000, ttl: ttlMs }) : null;
  const teams = new LRUCache<string, true>({ max: 1_000 });
  const teamIds = new LRUCache<string, string>({ max: 1_000 });
  return {
    async supplier(code, organisationId) {
      const key = `${organisationId.toHexString()}/${code}`;
      const cached = suppliers?.get(key);
      if (cached) return cached.row;
      const row = await findSupplierRow(models, code, organisationId);
      suppliers?.set(key, { row });
      return row;
    },
    async teamExists(id) {
      if (teams.has(id)) return true;
      const found = await operationsTeamExists(models, id);
      if (found) teams.set(id, true);
      return found;
    },
    async teamIdByName(name) {
      const cached = teamIds.get(name);
      if (cached) return cached;
      const id = await findOperationsTeamId(models, name);
      if (id !== null) teamIds.set(name, id);
      return id;
    },
  };
}
