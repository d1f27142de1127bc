import { stagedPayloadModel } from '../../src/storage/models/staged-payload.js';
import { payloadHash } from '../../src/storage/processes/import-processes.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { unpackText } from '../../src/storage/write-path/packed-text.js';
import type { TestApp } from '../support/app.js';
import { accountPayload, SUPPLIER, TEAM } from '../creation/support.js';

/** The cohort plan endpoints of one caller. */
export function planFor(t: TestApp, headers: Record<string, string>, supplier = SUPPLIER) {
  const url = `/v2/data-import/import-suppliers/${supplier}/plan/`;
  return {
    put: (body: unknown) => t.app.inject({ method: 'PUT', url, headers, payload: body as object }),
    get: () => t.app.inject({ method: 'GET', url, headers }),
    pause: (body: Record<string, unknown> = {}) =>
      t.app.inject({ method: 'POST', url: `${url}pause/`, headers, payload: body }),
    resume: () => t.app.inject({ method: 'POST', url: `${url}resume/`, headers, payload: {} }),
    progress: () =>
      t.app.inject({ method: 'GET', url: `/v2/data-import/import-suppliers/${supplier}/progress/`, headers }),
  };
}
export type PlanApi = ReturnType<typeof planFor>;

export const withTeam = (external: string) => ({ ...accountPayload(external), operations_team_name: TEAM });

/**
 * Makes a scheduled account's staged data one the worker refuses (the rules changed since it was scheduled):
 * the version its task creates from (kept under its hash) fails validation at creation time.
 */
export async function spoilScheduled(t: TestApp, external: string): Promise<void> {
  const payloads = stagedPayloadModel(t.app.db.conn);
  const key = processKey(SUPPLIER, external);
  const current = await payloads.findById(key).lean();
  if (!current) throw new Error(`${external} is not staged`);
  const hash = payloadHash(unpackText(current.payload));
  const invalid = JSON.stringify({ ...withTeam(external), billing_postcode: 'ABC' });
  const spoiled = { payload: invalid, validatedWith: 'an earlier deployment' };
  await payloads.updateOne({ _id: key }, { $set: spoiled });
  await payloads.updateOne({ _id: `${key}#${hash}` }, { $set: spoiled }, { upsert: true });
}
