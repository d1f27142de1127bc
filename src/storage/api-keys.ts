import { Types } from 'mongoose';
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
