import { Types } from 'mongoose';
import type { Models } from '../models/index.js';

/**
 * The repository of import suppliers and operations teams: what routes and creation look up by code, name or
 * id. Callers cache (the tenancy plugin, `creation/lookups.ts`); these are the reads behind the caches.
 */

/** The organisation's supplier with this code (a document: routes read its fields and virtuals), or null. */
export async function findSupplierDocument(
  models: Models,
  code: string,
  organisationId: Types.ObjectId | string,
) {
  return models.ImportSupplier.findOne({ code, organisationId });
}

/** The same, as a plain row. */
export async function findSupplierRow(models: Models, code: string, organisationId: Types.ObjectId | string) {
  return models.ImportSupplier.findOne({ code, organisationId }).lean();
}

/** Every supplier of the organisation (code and status), by code. */
export async function listSupplierRows(models: Models, organisationId: Types.ObjectId | string) {
  return models.ImportSupplier.find({ organisationId })
    .select({ code: 1, status: 1 })
    .sort({ code: 1 })
    .lean();
}

/** Whether an operations team has this id (a malformed id is no team). */
export async function operationsTeamExists(models: Models, id: string): Promise<boolean> {
  if (!Types.ObjectId.isValid(id)) return false;
  return (await models.OperationsTeam.exists({ _id: id })) !== null;
}

/** The id of the operations team with this name, or null. */
export async function findOperationsTeamId(models: Models, name: string): Promise<string | null> {
  const team = await models.OperationsTeam.findOne({ name }).select({ _id: 1 }).lean();
  return team ? team._id.toHexString() : null;
}
