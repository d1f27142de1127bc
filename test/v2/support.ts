import { onStart } from '../../src/domain/import-process/state.js';
import { formatUtcDatetime } from '../../src/schemas/primitives.js';
import type { Storage } from '../../src/storage/index.js';
import type { ProcessIdentity } from '../../src/storage/processes/process-event-records.js';
import type { TestApp } from '../support/app.js';
import { SUPPLIER } from '../creation/support.js';

/** The v2 endpoints for one caller. */
export function v2For(t: TestApp, headers: Record<string, string>, supplier = SUPPLIER) {
  const at = (external: string) => `/v2/data-import/accounts/${supplier}/${encodeURIComponent(external)}/`;
  return {
    validate: (body: unknown) =>
      t.app.inject({
        method: 'POST',
        url: '/v2/data-import/accounts/validate/',
        headers,
        payload: body as object,
      }),
    schedule: (payload: unknown, taskParams: Record<string, unknown> = {}) =>
      t.app.inject({
        method: 'POST',
        url: '/v2/data-import/accounts/',
        headers,
        payload: { payload, task_params: taskParams } as object,
      }),
    status: (external: string) => t.app.inject({ method: 'GET', url: at(external), headers }),
    events: (external: string) => t.app.inject({ method: 'GET', url: `${at(external)}events/`, headers }),
    cancel: (external: string) => t.app.inject({ method: 'DELETE', url: at(external), headers }),
  };
}
export type V2 = ReturnType<typeof v2For>;

/** A window bound `ms` from now, to the second (the interface's datetime format). */
export function inMs(ms: number): string {
  return formatUtcDatetime(new Date(Math.ceil((Date.now() + ms) / 1000) * 1000));
}

export const eventNames = (body: { event: string }[]) =>
  body.map((e) => e.event.replace('EVENT_ACCOUNT_IMPORT_PROCESS_', ''));

/** Records the start of the task a process waits for, as a worker's run `run` would (no worker runs). */
export function startTaskAsWorker(storage: Storage, identity: ProcessIdentity, run = 'run-1') {
  return storage.events.append(
    identity,
    (state) => {
      const decision = onStart(state, run, state.task!.id);
      return { event: 'start' in decision ? decision.start : null, result: null };
    },
    new Date(),
  );
}
