import type { TestApp } from '../support/app.js';
import { createTenant } from '../support/app.js';
import { CreationSlots } from '../../src/use-cases/creation/slots.js';
import { processKey } from '../../src/storage/processes/process-key.js';
import { taskJobId } from '../../src/use-cases/creation/schedule.js';
import { accountPayload, TEAM } from './support.js';

/** One organisation of a fairness test: its supplier, its caller's headers and its id. */
export type Org = { name: string; supplier: string; headers: Record<string, string>; id: string };

export async function organisation(t: TestApp, name: string, supplier: string): Promise<Org> {
  const { headers } = await createTenant(t, name, supplier);
  await t.ops.ensureTeam(TEAM);
  const row = await t.app.storage.organisations.findWithWeight(name);
  return { name, supplier, headers, id: String(row!._id) };
}

export function stage(t: TestApp, org: Org, external: string) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/data-import/account-import-process/create-or-update/',
    headers: org.headers,
    payload: { ...accountPayload(external), import_supplier: org.supplier },
  });
}

export function create(t: TestApp, org: Org, external: string, dryRun = false) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/data-import/account-import-process/process/',
    headers: org.headers,
    payload: {
      external_account_number: external,
      import_supplier_code: org.supplier,
      operations_team_name: TEAM,
      ...(dryRun ? { dry_run: true } : {}),
    },
  });
}

export function schedule(t: TestApp, org: Org, external: string, taskParams: Record<string, unknown> = {}) {
  return t.app.inject({
    method: 'POST',
    url: '/v2/data-import/accounts/',
    headers: org.headers,
    payload: {
      payload: { ...accountPayload(external), import_supplier: org.supplier, operations_team_name: TEAM },
      task_params: taskParams,
    },
  });
}

/**
 * A flood of v1 dry-run creates: `inFlight` loops, each on an account of its own (staged once), each sending
 * again as soon as it is answered; a 429 is waited out as its Retry-After says (capped at 1 s, with jitter).
 * Returns the answers' statuses so far and what stops it.
 */
export async function flood(t: TestApp, org: Org, inFlight: number, prefix: string) {
  const externals = Array.from({ length: inFlight }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  for (let i = 0; i < externals.length; i += 25)
    await Promise.all(externals.slice(i, i + 25).map((e) => stage(t, org, e)));
  const statuses = new Map<number, number>();
  let running = true;
  const loops = externals.map(async (external) => {
    while (running) {
      const res = await create(t, org, external, true);
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode === 429) {
        const seconds = Math.min(Number(res.headers['retry-after'] ?? 1), 1);
        await new Promise((r) => setTimeout(r, seconds * 1000 * (0.5 + Math.random())));
      }
    }
  });
  return {
    statuses,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** Samples the slots each organisation holds every 20 ms for `ms`; returns their mean and the peak in flight. */
export async function sampleShares(slots: CreationSlots, orgs: Org[], ms: number) {
  const sums = orgs.map(() => 0);
  let samples = 0;
  let peak = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const uses = await Promise.all(orgs.map((o) => slots.usage(o.id)));
    uses.forEach((u, i) => (sums[i]! += u.inUse));
    peak = Math.max(peak, ...uses.map((u) => u.inFlight));
    samples++;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { means: sums.map((s) => s / samples), samples, peak };
}

/** When the account's creation started (its STARTED event), in ms; null when it has not. */
export async function startedAt(t: TestApp, org: Org, external: string): Promise<number | null> {
  const history = await t.app.storage.events.history(processKey(org.supplier, external));
  const started = history.find((e) => e.kind === 'STARTED');
  return started ? started.occurredAt.getTime() : null;
}

/**
 * When the account's scheduled task was queued (its job's timestamp: the schedule request's own work came
 * before), when a worker began the run that created it (its `processedOn`: a parked task's last run is the one
 * that took the slot), and when that run recorded STARTED; null until it has.
 */
export async function taskStartedAt(t: TestApp, org: Org, external: string) {
  const key = processKey(org.supplier, external);
  const history = await t.app.storage.events.history(key);
  const scheduled = history.find((e) => e.kind === 'SCHEDULED');
  const started = history.find((e) => e.kind === 'STARTED');
  if (!scheduled || !started) return null;
  const job = await t.app.queues.queue('account-creation').getJob(taskJobId(key, scheduled.seq));
  if (!job?.processedOn) return null;
  return { queued: job.timestamp, run: job.processedOn, recorded: started.occurredAt.getTime() };
}

/** The value at the nearest rank of `p` (0–1) in `values`. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
}
