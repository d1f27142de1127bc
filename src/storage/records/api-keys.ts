import { isValidObjectId, Types } from 'mongoose';
import type { Models } from '../models/index.js';

/** The repository of API keys: looked up by `_id` (a token's key) or by the keyed hash of the key itself. */

/** The key a token names (its organisation and revocation), or null; a malformed id is no key. */
export async function findApiKeyById(models: Models, id: string) {
  if (!Types.ObjectId.isValid(id)) return null;
  // By `_id` alone: the one lookup every MongoDB-compatible server answers from an index.
  return models.ApiKey.findById(id, { organisationId: 1, revokedAt: 1 }).lean();
}

/** The key whose keyed hash this is (the token endpoint's exchange of an API key), or null. */
export async function findApiKeyByHash(models: Models, hash: string) {
  return models.ApiKey.findOne({ hash }, { organisationId: 1, revokedAt: 1 }).lean();
}

/** Stores a new key of the organisation (its prefix and the keyed hash of its secret); returns its id. */
export async function insertApiKey(
  models: Models,
  key: { organisationId: Types.ObjectId; prefix: string; hash: string },
): Promise<string> {
  const doc = await models.ApiKey.create(key);
  return doc.id as string;
}

export type Revocation =
  | { revoked: true; id: string; prefix: string; revokedAt: Date }
  | { revoked: false; reason: 'already_revoked' | 'unknown' };

/** Revokes the key with this id (or, not an id, this prefix) as of `now`; tokens minted from it stop working. */
export async function revokeApiKey(models: Models, idOrPrefix: string, now: Date): Promise<Revocation> {
  const filter = isValidObjectId(idOrPrefix) ? { _id: idOrPrefix } : { prefix: idOrPrefix };
  const doc = await models.ApiKey.findOneAndUpdate(
    { ...filter, revokedAt: null },
    { $set: { revokedAt: now } },
    { returnDocument: 'after' },
  ).lean();
  if (doc) return { revoked: true, id: doc._id.toHexString(), prefix: doc.prefix, revokedAt: now };
  const exists = await models.ApiKey.exists(filter);
  return { revoked: false, reason: exists ? 'already_revoked' : 'unknown' };
}
