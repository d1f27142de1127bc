import type { Types } from 'mongoose';
import { isDuplicateKey } from '../../infra/mongo.js';
import type { Models } from '../models/index.js';

/** The repository of organisations (the tenants): operators create them by name and never rename them. */

export type OrganisationRow = { _id: Types.ObjectId; name: string };

/** Creates the organisation; null when one has this name already (names are unique). */
export async function insertOrganisation(models: Models, name: string): Promise<OrganisationRow | null> {
  try {
    const org = await models.Organisation.create({ name });
    return { _id: org._id, name: org.name };
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
}

/** The organisation with this name, created if there is none (idempotent). */
export async function ensureOrganisation(models: Models, name: string): Promise<OrganisationRow> {
  const org = await models.Organisation.findOneAndUpdate(
    { name },
    { $setOnInsert: { name } },
    { upsert: true, returnDocument: 'after' },
  );
  return { _id: org._id, name: org.name };
}

/** The organisation with this name, or null. */
export async function findOrganisationByName(models: Models, name: string): Promise<OrganisationRow | null> {
  return models.Organisation.findOne({ name }, { name: 1 }).lean<OrganisationRow>();
}

/** The organisation with this id, or null. */
export async function findOrganisationById(
  models: Models,
  id: Types.ObjectId,
): Promise<OrganisationRow | null> {
  return models.Organisation.findById(id, { name: 1 }).lean<OrganisationRow>();
}
