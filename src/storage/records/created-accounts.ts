import { LRUCache } from 'lru-cache';
import type { Types } from 'mongoose';
import { processKey } from '../processes/process-key.js';
import type { Models } from '../models/index.js';
import { derivedId } from '../models/record-ids.js';
import { findProcess } from '../processes/import-processes.js';
import { findAccount } from './accounts.js';

/** One account per import process, by construction: its id is derived from the process key (found by it). */
export function accountIdFor(processId: string): Types.ObjectId {
  return derivedId(processId, 'account');
}

/**
 * What a post-import step knows of its account: what never changes once the account is created (its id, its
 * number, and the key of the import process that created it).
 */
export type CreatedAccount = { _id: Types.ObjectId; number: string; processId: string };

/**
 * The created accounts, as the post-import requests find them, remembered by the process (built once per
 * process with its storage object). An account found once is remembered: a process once imported stays
 * imported, and its account keeps its id and number for good, so what is remembered is never stale (a
 * migration sends each account several post-import requests; each one after the first reads nothing here).
 * Only what is found is remembered: an account not created yet is looked up again on every request.
 */
export class CreatedAccounts {
  private readonly known = new LRUCache<string, CreatedAccount>({ max: 100_000 });

  constructor(private readonly models: Models) {}

  /**
   * The created account of the supplier's process for this external account number, or null for an unknown,
   * staged-only or half-created one (creation crashed before its last step, marking the process imported).
   */
  async find(supplierCode: string, externalAccountNumber: string): Promise<CreatedAccount | null> {
    const key = processKey(supplierCode, externalAccountNumber);
    const cached = this.known.get(key);
    if (cached) return cached;
    const process = await findProcess(this.models, key);
    const account = process?.krakenAccountNumber ? await findAccount(this.models, accountIdFor(key)) : null;
    if (!account) return null;
    const created = { _id: account._id, number: account.number, processId: key };
    this.known.set(key, created);
    return created;
  }
}
