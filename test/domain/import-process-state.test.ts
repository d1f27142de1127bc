import { describe, expect, it } from 'vitest';
import {
  emptyState,
  foldEvent,
  isFresh,
  onCancel,
  onFinish,
  onSchedule,
  onStaged,
  onStart,
  onWindowExpired,
  stateAtSchedule,
  type NewEvent,
  type ProcessState,
} from '../../src/domain/import-process/state.js';
import { taskWindow } from '../../src/domain/import-process/window.js';

const task = {
  windowStart: '2026-11-24T10:00:00Z',
  windowEnd: '2026-11-28T10:00:00Z',
  dryRun: false,
  operationsTeamId: '0123456789abcdef01234567',
};

/** The state after appending these events in order. */
function after(...events: NewEvent[]): ProcessState {
  return events.reduce(
    (state, e, seq) =>
      foldEvent(state, seq, { seq, kind: e.kind, data: e.data, run: e.run ?? null, occurredAt: new Date() }),
    emptyState,
  );
}
const scheduled = () =>
  after(
    { kind: 'CREATED', data: {} },
    (onSchedule(after({ kind: 'CREATED', data: {} }), task) as { event: NewEvent }).event,
  );

const onScheduleEvent = (state: ProcessState) => (onSchedule(state, task) as { event: NewEvent }).event;

describe('import process state', () => {
  it('a first stage records CREATED; later stages nothing', () => {
    expect(onStaged(emptyState)).toEqual({ kind: 'CREATED', data: {} });
    expect(onStaged(after({ kind: 'CREATED', data: {} }))).toBeNull();
    expect(after({ kind: 'CREATED', data: {} }).status).toBe('PENDING');
  });

  it('a schedule is PENDING with its task at its position; refused while running or once processed', () => {
    const state = scheduled();
    expect(state).toMatchObject({ status: 'PENDING', task: { id: 1, ...task } });
    const running = foldEvent(state, 2, {
      seq: 2,
      kind: 'STARTED',
      data: { task: 1 },
      run: 'job-1',
      occurredAt: new Date(),
    });
    expect(onSchedule(running, task)).toEqual({ refusal: 'account_import_in_progress' });
    const done = foldEvent(running, 3, {
      seq: 3,
      kind: 'PROCESSED',
      data: { kraken_account_number: 'A-12345678' },
      run: 'job-1',
      occurredAt: new Date(),
    });
    expect(done).toMatchObject({ status: 'PROCESSED', krakenAccountNumber: 'A-12345678' });
    expect(onSchedule(done, task)).toEqual({ refusal: 'account_import_process_already_imported' });
  });

  it('cancel and start are exclusive: from the same state each is possible, after either the other is not', () => {
    const state = scheduled();
    const cancel = onCancel(state)!;
    const start = onStart(state, 'job-1', 1);
    expect(cancel.kind).toBe('CANCELLED');
    expect(start).toEqual({ start: { kind: 'STARTED', data: { task: 1 }, run: 'job-1' } });
    const cancelled = foldEvent(state, 2, { seq: 2, ...cancel, run: null, occurredAt: new Date() });
    expect(onStart(cancelled, 'job-1', 1)).toEqual({ skip: 'superseded' });
    const started = foldEvent(state, 2, {
      seq: 2,
      kind: 'STARTED',
      data: { task: 1 },
      run: 'job-1',
      occurredAt: new Date(),
    });
    expect(onCancel(started)).toBeNull();
    // The same run again (after a crash) resumes without writing.
    expect(onStart(started, 'job-1', 1)).toEqual({ resume: true });
  });

  it('a replaced task is superseded; a v1 create overtakes a waiting task', () => {
    const state = scheduled();
    expect(onStart(state, 'job-0', 0)).toEqual({ skip: 'superseded' });
    expect(onStart(state, 'create-x-1', null)).toEqual({
      start: { kind: 'STARTED', data: {}, run: 'create-x-1' },
    });
  });

  it('outcomes: PROCESSED once whoever ran; a failure only from the run in progress', () => {
    const started = foldEvent(scheduled(), 2, {
      seq: 2,
      kind: 'STARTED',
      data: { task: 1 },
      run: 'job-1',
      occurredAt: new Date(),
    });
    const error = { code: 'account_failed_validation', detail: 'x', domain: 'import_process' };
    expect(onFinish(started, 'other', { kind: 'ERRORED', error })).toBeNull();
    expect(
      onFinish(started, 'job-1', { kind: 'ERRORED', error, errors: [{ code: 'c', attr: 'a' }] }),
    ).toEqual({
      kind: 'ERRORED',
      data: { error, errors: [{ code: 'c', attr: 'a' }] },
      run: 'job-1',
    });
    expect(onFinish(started, 'other', { kind: 'PROCESSED', krakenAccountNumber: 'A-1' })?.kind).toBe(
      'PROCESSED',
    );
    const errored = foldEvent(started, 3, {
      seq: 3,
      kind: 'ERRORED',
      data: { error },
      run: 'job-1',
      occurredAt: new Date(),
    });
    expect(errored).toMatchObject({ status: 'ERRORED', latestError: error });
  });

  it('a SCHEDULED event sets all of the state but the account number and the error (isFresh, stateAtSchedule)', () => {
    const error = { code: 'schedule_window_expired', detail: 'x', domain: 'import_process' };
    // Every field set, and unlike the empty state's (a field added later must be set here too).
    const before: ProcessState = {
      status: 'ERRORED',
      krakenAccountNumber: 'A-12345678',
      task: { id: 2, ...task, dryRun: true },
      run: 'job-2',
      latestEvent: { seq: 3, kind: 'ERRORED', data: { error }, run: 'job-2', occurredAt: new Date(0) },
      latestError: error,
      seq: 3,
    };
    const event = { seq: 4, ...onScheduleEvent(before), run: null, occurredAt: new Date() };
    expect(isFresh(before)).toBe(false);
    expect(stateAtSchedule(event)).toEqual({
      ...foldEvent(before, 4, event),
      krakenAccountNumber: null,
      latestError: null,
    });
    const fresh = { ...before, krakenAccountNumber: null, latestError: null };
    expect(isFresh(fresh)).toBe(true);
    expect(stateAtSchedule(event)).toEqual(foldEvent(fresh, 4, event));
    expect(isFresh(after({ kind: 'CREATED', data: {} }))).toBe(true);
    // Any other entry there (a VOID, a cancel) depends on the history before it.
    expect(stateAtSchedule(null)).toBeNull();
    expect(stateAtSchedule({ ...event, kind: 'CANCELLED', data: {} })).toBeNull();
  });

  it('a window expires only for the task still waiting', () => {
    expect(onWindowExpired(scheduled(), 1)?.data).toMatchObject({
      error: { code: 'schedule_window_expired' },
    });
    expect(onWindowExpired(scheduled(), 0)).toBeNull();
  });
});

describe('task window', () => {
  const now = new Date('2026-11-24T10:00:00Z');
  it('defaults: start now, end four days after the start (a later start keeps its default end)', () => {
    expect(taskWindow({}, now)).toEqual({
      ok: true,
      window: { windowStart: '2026-11-24T10:00:00Z', windowEnd: '2026-11-28T10:00:00Z' },
    });
    expect(
      taskWindow({ schedule_window_start: '2026-11-26T10:00:00Z', schedule_window_end: null }, now),
    ).toEqual({
      ok: true,
      window: { windowStart: '2026-11-26T10:00:00Z', windowEnd: '2026-11-30T10:00:00Z' },
    });
  });
  it('the platform codes at their paths; 60 s of clock skew allowed', () => {
    expect(taskWindow({ schedule_window_start: '2026-11-24T09:59:01Z' }, now).ok).toBe(true);
    const codes = (params: Record<string, string>) => {
      const r = taskWindow(params, now);
      return r.ok ? [] : r.errors.map((e) => `${e.code}@${e.attr}`);
    };
    expect(codes({ schedule_window_start: '2026-11-24T09:58:59Z' })).toEqual([
      'schedule_window_start_in_past@task_params.schedule_window_start',
    ]);
    expect(codes({ schedule_window_end: '2026-11-28T10:00:01Z' })).toEqual([
      'schedule_window_end_too_far_in_future@task_params.schedule_window_end',
    ]);
    expect(
      codes({ schedule_window_start: '2026-11-25T10:00:00Z', schedule_window_end: '2026-11-25T10:00:00Z' }),
    ).toEqual(['schedule_window_start__after_end@task_params.schedule_window_end']);
  });
});
