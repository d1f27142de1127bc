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

/** Sets an organisation's weight in the creation limit's fair share; null when there is no such organisation. */
export async function setOrganisationWeight(
  models: Models,
  name: string,
  weight: number,
): Promise<OrganisationRow | null> {
  const row = await models.Organisation.findOneAndUpdate(
    { name },
    { $set: { creationWeight: weight } },
    { returnDocument: 'after' },
  ).lean<OrganisationRow>();
  return row ? { _id: row._id, name: row.name } : null;
}

/** The weights set in the creation limit's fair share, by organisation id (an organisation not named: 1). */
export async function organisationWeights(models: Models): Promise<Map<string, number>> {
  const rows = await models.Organisation.find(
    { creationWeight: { $exists: true } },
    { creationWeight: 1 },
  ).lean<{ _id: Types.ObjectId; creationWeight?: number | null }[]>();
  return new Map(rows.map((row) => [String(row._id), row.creationWeight ?? 1]));
}

/** An organisation with its weight (for `org show`). */
export async function findOrganisationWithWeight(
  models: Models,
  name: string,
): Promise<(OrganisationRow & { creationWeight: number }) | null> {
  const row = await models.Organisation.findOne({ name }, { name: 1, creationWeight: 1 }).lean<
    OrganisationRow & { creationWeight?: number | null }
  >();
  return row ? { _id: row._id, name: row.name, creationWeight: row.creationWeight ?? 1 } : null;
}
