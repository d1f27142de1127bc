import { isValidObjectId } from 'mongoose';
import { generateApiKey, hashApiKey } from '../auth/api-keys.js';
import { processKey } from '../models/account-import-process.js';
import type { Models } from '../models/index.js';
import { supplierStatuses, type SupplierStatus } from '../models/import-supplier.js';
import { isDuplicateKey } from '../infra/mongo.js';
import { progressCountersOf } from '../storage/progress-counters.js';
import { rebuildProgress } from '../progress/rebuild.js';
import { DEFAULT_REGION, isRegionName, regionNames } from '../domain/region/names.js';

/** An operator mistake (duplicate, unknown name, bad value): the CLI prints its message and exits non-zero. */
export class OperatorError extends Error {}

const SUPPLIER_CODE = /^[A-Z0-9_]{1,32}$/;

export type SupplierOptions = {
  status?: string;
  documentRoot?: string;
  documentBucket?: string;
  sendMigrationEmail?: boolean;
  region?: string;
  /** The team v2 schedules use when the payload names none. */
  defaultTeam?: string;
};

/** Operator actions, shared by the CLI and the demo seed. Each returns a plain JSON-able object. */
export class Operations {
  constructor(
    private readonly models: Models,
    private readonly hashSecret: string,
  ) {}

  async createOrganisation(name: string) {
    if (!name.trim()) throw new OperatorError('organisation name must not be empty');
    try {
      const org = await this.models.Organisation.create({ name });
      const key = await this.createApiKey(name);
      return {
        organisation: { id: org.id as string, name: org.name },
        api_key: key.api_key,
        api_key_prefix: key.prefix,
      };
    } catch (err) {
      if (isDuplicateKey(err)) throw new OperatorError(`organisation "${name}" already exists`);
      throw err;
    }
  }

  async ensureOrganisation(name: string) {
    const org = await this.models.Organisation.findOneAndUpdate(
      { name },
      { $setOnInsert: { name } },
      { upsert: true, returnDocument: 'after' },
    );
    return { id: org.id as string, name: org.name };
  }

  async createApiKey(orgName: string) {
    const org = await this.models.Organisation.findOne({ name: orgName });
    if (!org) throw new OperatorError(`organisation "${orgName}" does not exist`);
    const { key, prefix } = generateApiKey();
    const doc = await this.models.ApiKey.create({
      organisationId: org._id,
      prefix,
      hash: hashApiKey(key, this.hashSecret),
    });
    return { id: doc.id as string, prefix, organisation: org.name, api_key: key };
  }

  async revokeApiKey(idOrPrefix: string) {
    const filter = isValidObjectId(idOrPrefix) ? { _id: idOrPrefix } : { prefix: idOrPrefix };
    const doc = await this.models.ApiKey.findOneAndUpdate(
      { ...filter, revokedAt: null },
      { $set: { revokedAt: new Date() } },
      { returnDocument: 'after' },
    );
    if (!doc) {
      const exists = await this.models.ApiKey.exists(filter);
      throw new OperatorError(
        exists ? `API key ${idOrPrefix} is already revoked` : `API key ${idOrPrefix} does not exist`,
      );
    }
    return { id: doc.id as string, prefix: doc.prefix, revoked_at: doc.revokedAt?.toISOString() };
  }

  async createSupplier(code: string, orgName: string, options: SupplierOptions = {}) {
    if (!SUPPLIER_CODE.test(code))
      throw new OperatorError(`supplier code "${code}" must match ${SUPPLIER_CODE.source}`);
    const status = this.parseStatus(options.status ?? 'Ongoing');
    // Every request of a supplier is validated with its region's profile: an unknown one would fail them all.
    const region = options.region ?? DEFAULT_REGION;
    if (!isRegionName(region))
      throw new OperatorError(`region "${region}" must be one of ${regionNames.join(', ')}`);
    const org = await this.models.Organisation.findOne({ name: orgName });
    if (!org) throw new OperatorError(`organisation "${orgName}" does not exist`);
    const defaultTeam = options.defaultTeam === undefined ? null : await this.teamId(options.defaultTeam);
    try {
      const doc = await this.models.ImportSupplier.create({
        code,
        organisationId: org._id,
        status,
        documentRoot: options.documentRoot ?? '',
        documentBucket: options.documentBucket ?? null,
        sendMigrationEmail: options.sendMigrationEmail ?? false,
        region,
        defaultOperationsTeamId: defaultTeam,
      });
      return this.showSupplier(doc.code);
    } catch (err) {
      if (isDuplicateKey(err)) throw new OperatorError(`supplier "${code}" already exists`);
      throw err;
    }
  }

  async setSupplierStatus(code: string, statusText: string) {
    const status = this.parseStatus(statusText);
    const doc = await this.models.ImportSupplier.findOneAndUpdate(
      { code },
      { $set: { status } },
      { returnDocument: 'after' },
    );
    if (!doc) throw new OperatorError(`supplier "${code}" does not exist`);
    return this.showSupplier(code);
  }

  /** Sets the team v2 schedules of this supplier use when the payload names none. */
  async setSupplierDefaultTeam(code: string, teamName: string) {
    const teamId = await this.teamId(teamName);
    const doc = await this.models.ImportSupplier.findOneAndUpdate(
      { code },
      { $set: { defaultOperationsTeamId: teamId } },
      { returnDocument: 'after' },
    );
    if (!doc) throw new OperatorError(`supplier "${code}" does not exist`);
    return this.showSupplier(code);
  }

  private async teamId(name: string) {
    const team = await this.models.OperationsTeam.findOne({ name }).select({ _id: 1 }).lean();
    if (!team) throw new OperatorError(`team "${name}" does not exist`);
    return team._id;
  }

  async showSupplier(code: string) {
    const doc = await this.models.ImportSupplier.findOne({ code });
    if (!doc) throw new OperatorError(`supplier "${code}" does not exist`);
    const org = await this.models.Organisation.findById(doc.organisationId);
    const team = doc.defaultOperationsTeamId
      ? await this.models.OperationsTeam.findById(doc.defaultOperationsTeamId).lean()
      : null;
    return this.describeSupplier(doc, org?.name ?? null, team?.name ?? null);
  }

  async createTeam(name: string) {
    if (!name.trim()) throw new OperatorError('team name must not be empty');
    try {
      const team = await this.models.OperationsTeam.create({ name });
      return { team: { id: team.id as string, name: team.name } };
    } catch (err) {
      if (isDuplicateKey(err)) throw new OperatorError(`team "${name}" already exists`);
      throw err;
    }
  }

  async ensureTeam(name: string) {
    await this.models.OperationsTeam.updateOne({ name }, { $setOnInsert: { name } }, { upsert: true });
    return { name };
  }

  /** Marks an import process skipped (creating it if nothing was staged yet); staging and creation then refuse it. */
  async skipAccount(code: string, externalAccountNumber: string) {
    const supplier = await this.models.ImportSupplier.findOne({ code });
    if (!supplier) throw new OperatorError(`supplier "${code}" does not exist`);
    const _id = processKey(code, externalAccountNumber);
    const existing = await this.models.AccountImportProcess.findById(_id);
    if (existing?.krakenAccountNumber) {
      throw new OperatorError(
        `account ${externalAccountNumber} is already imported as ${existing.krakenAccountNumber}`,
      );
    }
    await this.models.AccountImportProcess.updateOne(
      { _id },
      {
        $set: { skipped: true },
        $setOnInsert: {
          organisationId: supplier.organisationId,
          importSupplier: code,
          externalAccountNumber,
        },
      },
      { upsert: true },
    );
    // Counted apart from the statuses (idempotent: marking it again changes nothing); without Redis, the
    // progress rebuild counts it.
    await progressCountersOf(this.models)?.skip(code, externalAccountNumber, new Date());
    return { import_supplier: code, external_account_number: externalAccountNumber, skipped: true };
  }

  /** Rebuilds a supplier's cohort progress counters from the records and says whether they had drifted. */
  async rebuildProgress(code: string) {
    const supplier = await this.models.ImportSupplier.findOne({ code }).lean();
    if (!supplier) throw new OperatorError(`supplier "${code}" does not exist`);
    const counters = progressCountersOf(this.models);
    if (!counters) throw new OperatorError('the progress counters need Redis (REDIS_URL)');
    return rebuildProgress(this.models, counters, code);
  }

  private parseStatus(value: string): SupplierStatus {
    const match = supplierStatuses.find((s) => s === value);
    if (!match) throw new OperatorError(`status "${value}" must be one of ${supplierStatuses.join(', ')}`);
    return match;
  }

  private describeSupplier(
    doc: {
      code: string;
      status: string;
      documentRoot?: string | null;
      documentBucket?: string | null;
      sendMigrationEmail?: boolean | null;
      region?: string | null;
    },
    organisation: string | null,
    defaultTeam: string | null,
  ) {
    return {
      code: doc.code,
      organisation,
      status: doc.status,
      document_root: doc.documentRoot ?? '',
      document_bucket: doc.documentBucket ?? null,
      send_migration_email: doc.sendMigrationEmail ?? false,
      region: doc.region ?? DEFAULT_REGION,
      default_team: defaultTeam,
    };
  }
}
