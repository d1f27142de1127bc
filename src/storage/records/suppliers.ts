import { LRUCache } from 'lru-cache';
import { Types } from 'mongoose';
import type { SupplierStatus } from '../../vocabulary/supplier-statuses.js';
import { isDuplicateKey } from '../../infra/mongo.js';
import type { Models } from '../models/index.js';

/** An import supplier, as every part of the service reads it (a plain row; no document leaves storage). */
export type Supplier = {
  _id: Types.ObjectId;
  code: string;
  organisationId: Types.ObjectId;
  status: SupplierStatus;
  documentRoot: string;
  documentBucket: string | null;
  sendMigrationEmail: boolean;
  region: string;
  operationsTeamAutoAllocation: boolean;
  /** The team v2 schedules use when the account payload names none (`supplier set-default-team`). */
  defaultOperationsTeamId: Types.ObjectId | null;
};

/** A supplier as an operator creates it (`import-admin supplier create`). */
export type NewSupplier = Omit<
  Supplier,
  '_id' | 'operationsTeamAutoAllocation' | 'defaultOperationsTeamId'
> & {
  defaultOperationsTeamId: string | null;
};

/** What an operator changes of a supplier. */
export type SupplierChange = Partial<{ status: SupplierStatus; defaultOperationsTeamId: string }>;

/**
 * The repository of import suppliers and operations teams, and the process's one cache of them. Status
 * changes by operators (Paused, Complete) reach every process within `ttlMs` (the API's `AUTH_CACHE_TTL_MS`;
 * 0 turns remembering suppliers off); absent suppliers are remembered too. Teams are created by operators and
 * never renamed or removed, so a found team is remembered for good.
 */
export class SupplierStore {
  private readonly suppliers: LRUCache<string, { row: Supplier | null }> | null;
  private readonly teams = new LRUCache<string, true>({ max: 1_000 });
  private readonly teamIds = new LRUCache<string, string>({ max: 1_000 });

  constructor(
    private readonly models: Models,
    ttlMs: number,
  ) {
    this.suppliers = ttlMs > 0 ? new LRUCache({ max: 10_000, ttl: ttlMs }) : null;
  }

  /** The organisation's supplier with this code, or null: another organisation's supplier is none. */
  async find(code: string, organisationId: Types.ObjectId | string): Promise<Supplier | null> {
    const key = `${String(organisationId)}/${code}`;
    const hit = this.suppliers?.get(key);
    if (hit) return hit.row;
    const row = await this.models.ImportSupplier.findOne({ code, organisationId }).lean<Supplier>();
    this.suppliers?.set(key, { row });
    return row;
  }

  /** Every supplier of the organisation (code and status), by code; never cached. */
  async list(organisationId: Types.ObjectId | string): Promise<{ code: string; status: SupplierStatus }[]> {
    return this.models.ImportSupplier.find({ organisationId })
      .select({ code: 1, status: 1, _id: 0 })
      .sort({ code: 1 })
      .lean<{ code: string; status: SupplierStatus }[]>();
  }

  /** Whether an operations team has this id (a malformed id is no team). */
  async teamExists(id: string): Promise<boolean> {
    if (this.teams.has(id)) return true;
    if (!Types.ObjectId.isValid(id)) return false;
    const found = (await this.models.OperationsTeam.exists({ _id: id })) !== null;
    if (found) this.teams.set(id, true);
    return found;
  }

  /** The id of the operations team with this name, or null. */
  async teamIdByName(name: string): Promise<string | null> {
    const cached = this.teamIds.get(name);
    if (cached) return cached;
    const team = await this.models.OperationsTeam.findOne({ name }).select({ _id: 1 }).lean();
    const id = team ? team._id.toHexString() : null;
    if (id !== null) this.teamIds.set(name, id);
    return id;
  }

  /** The supplier with this code, whichever its organisation (operators name suppliers by code); never cached. */
  async byCode(code: string): Promise<Supplier | null> {
    return this.models.ImportSupplier.findOne({ code }).lean<Supplier>();
  }

  /** Every supplier's code (the workers' progress watch goes through them all). */
  async codes(): Promise<string[]> {
    const rows = await this.models.ImportSupplier.find({}, { code: 1 }).lean<{ code: string }[]>().exec();
    return rows.map((r) => r.code);
  }

  /** Creates the supplier; false when one has this code already (codes are unique). */
  async insert(supplier: NewSupplier): Promise<boolean> {
    try {
      await this.models.ImportSupplier.create(supplier);
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }

  /** Changes the supplier with this code; false when there is none. This process sees the change at once. */
  async update(code: string, change: SupplierChange): Promise<boolean> {
    const row = await this.models.ImportSupplier.findOneAndUpdate(
      { code },
      { $set: change },
      { returnDocument: 'after' },
    ).lean<Supplier>();
    if (row) this.suppliers?.delete(`${String(row.organisationId)}/${code}`);
    return row !== null;
  }

  /** Creates the operations team; null when one has this name already (names are unique). */
  async insertTeam(name: string): Promise<{ id: string; name: string } | null> {
    try {
      const team = await this.models.OperationsTeam.create({ name });
      return { id: team._id.toHexString(), name: team.name };
    } catch (err) {
      if (isDuplicateKey(err)) return null;
      throw err;
    }
  }

  /** Creates the operations team unless it exists (idempotent). */
  async ensureTeam(name: string): Promise<void> {
    await this.models.OperationsTeam.updateOne({ name }, { $setOnInsert: { name } }, { upsert: true });
  }

  /** The name of the operations team with this id, or null. */
  async teamName(id: Types.ObjectId): Promise<string | null> {
    const team = await this.models.OperationsTeam.findById(id, { name: 1 }).lean();
    return team?.name ?? null;
  }
}
