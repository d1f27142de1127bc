import { generateApiKey, hashApiKey } from '../../auth/api-keys.js';
import type { Storage } from '../../storage/index.js';
import { supplierStatuses, type SupplierStatus } from '../../vocabulary/supplier-statuses.js';
import { isCounted, rebuildProgress } from '../progress/rebuild.js';
import { DEFAULT_REGION, isRegionName, regionNames } from '../../domain/region/names.js';

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
    private readonly storage: Storage,
    private readonly hashSecret: string,
  ) {}

  async createOrganisation(name: string) {
    if (!name.trim()) throw new OperatorError('organisation name must not be empty');
    const org = await this.storage.organisations.insert(name);
    if (!org) throw new OperatorError(`organisation "${name}" already exists`);
    const key = await this.createApiKey(name);
    return {
      organisation: { id: org._id.toHexString(), name: org.name },
      api_key: key.api_key,
      api_key_prefix: key.prefix,
    };
  }

  async ensureOrganisation(name: string) {
    const org = await this.storage.organisations.ensure(name);
    return { id: org._id.toHexString(), name: org.name };
  }

  async createApiKey(orgName: string) {
    const org = await this.organisation(orgName);
    const { key, prefix } = generateApiKey();
    const id = await this.storage.apiKeys.insert({
      organisationId: org._id,
      prefix,
      hash: hashApiKey(key, this.hashSecret),
    });
    return { id, prefix, organisation: org.name, api_key: key };
  }

  async revokeApiKey(idOrPrefix: string) {
    const revocation = await this.storage.apiKeys.revoke(idOrPrefix, new Date());
    if (!revocation.revoked) {
      throw new OperatorError(
        revocation.reason === 'already_revoked'
          ? `API key ${idOrPrefix} is already revoked`
          : `API key ${idOrPrefix} does not exist`,
      );
    }
    return { id: revocation.id, prefix: revocation.prefix, revoked_at: revocation.revokedAt.toISOString() };
  }

  async createSupplier(code: string, orgName: string, options: SupplierOptions = {}) {
    if (!SUPPLIER_CODE.test(code))
      throw new OperatorError(`supplier code "${code}" must match ${SUPPLIER_CODE.source}`);
    const status = this.parseStatus(options.status ?? 'Ongoing');
    // Every request of a supplier is validated with its region's profile: an unknown one would fail them all.
    const region = options.region ?? DEFAULT_REGION;
    if (!isRegionName(region))
      throw new OperatorError(`region "${region}" must be one of ${regionNames.join(', ')}`);
    const org = await this.organisation(orgName);
    const defaultTeam = options.defaultTeam === undefined ? null : await this.teamId(options.defaultTeam);
    const created = await this.storage.suppliers.insert({
      code,
      organisationId: org._id,
      status,
      documentRoot: options.documentRoot ?? '',
      documentBucket: options.documentBucket ?? null,
      sendMigrationEmail: options.sendMigrationEmail ?? false,
      region,
      defaultOperationsTeamId: defaultTeam,
    });
    if (!created) throw new OperatorError(`supplier "${code}" already exists`);
    return this.showSupplier(code);
  }

  async setSupplierStatus(code: string, statusText: string) {
    const status = this.parseStatus(statusText);
    if (!(await this.storage.suppliers.update(code, { status })))
      throw new OperatorError(`supplier "${code}" does not exist`);
    return this.showSupplier(code);
  }

  /** Sets the team v2 schedules of this supplier use when the payload names none. */
  async setSupplierDefaultTeam(code: string, teamName: string) {
    const defaultOperationsTeamId = await this.teamId(teamName);
    if (!(await this.storage.suppliers.update(code, { defaultOperationsTeamId })))
      throw new OperatorError(`supplier "${code}" does not exist`);
    return this.showSupplier(code);
  }

  async showSupplier(code: string) {
    const supplier = await this.supplier(code);
    const org = await this.storage.organisations.findById(supplier.organisationId);
    const team = supplier.defaultOperationsTeamId
      ? await this.storage.suppliers.teamName(supplier.defaultOperationsTeamId)
      : null;
    return describeSupplier(supplier, org?.name ?? null, team);
  }

  async createTeam(name: string) {
    if (!name.trim()) throw new OperatorError('team name must not be empty');
    const team = await this.storage.suppliers.insertTeam(name);
    if (!team) throw new OperatorError(`team "${name}" already exists`);
    return { team };
  }

  async ensureTeam(name: string) {
    await this.storage.suppliers.ensureTeam(name);
    return { name };
  }

  /** Marks an import process skipped (creating it if nothing was staged yet); staging and creation then refuse it. */
  async skipAccount(code: string, externalAccountNumber: string) {
    const supplier = await this.supplier(code);
    const outcome = await this.storage.processes.skip(supplier, externalAccountNumber);
    if (!outcome.skipped) {
      throw new OperatorError(
        `account ${externalAccountNumber} is already imported as ${outcome.importedAs}`,
      );
    }
    // Counted apart from the statuses (idempotent: marking it again changes nothing); without Redis, the
    // progress rebuild counts it.
    await this.storage.progress?.skip(code, externalAccountNumber, new Date());
    return { import_supplier: code, external_account_number: externalAccountNumber, skipped: true };
  }

  /** Rebuilds a supplier's cohort progress counters from the records and says whether they had drifted. */
  async rebuildProgress(code: string) {
    await this.supplier(code);
    const storage = this.storage;
    if (!isCounted(storage)) throw new OperatorError('the progress counters need Redis (REDIS_URL)');
    return rebuildProgress(storage, code);
  }

  private async organisation(name: string) {
    const org = await this.storage.organisations.findByName(name);
    if (!org) throw new OperatorError(`organisation "${name}" does not exist`);
    return org;
  }

  private async supplier(code: string) {
    const supplier = await this.storage.suppliers.byCode(code);
    if (!supplier) throw new OperatorError(`supplier "${code}" does not exist`);
    return supplier;
  }

  private async teamId(name: string) {
    const id = await this.storage.suppliers.teamIdByName(name);
    if (id === null) throw new OperatorError(`team "${name}" does not exist`);
    return id;
  }

  private parseStatus(value: string): SupplierStatus {
    const match = supplierStatuses.find((s) => s === value);
    if (!match) throw new OperatorError(`status "${value}" must be one of ${supplierStatuses.join(', ')}`);
    return match;
  }
}

/** A supplier as operators see it (fields that older records lack read as their defaults). */
function describeSupplier(
  supplier: {
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
    code: supplier.code,
    organisation,
    status: supplier.status,
    document_root: supplier.documentRoot ?? '',
    document_bucket: supplier.documentBucket ?? null,
    send_migration_email: supplier.sendMigrationEmail ?? false,
    region: supplier.region ?? DEFAULT_REGION,
    default_team: defaultTeam,
  };
}
